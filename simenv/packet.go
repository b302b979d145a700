package simenv

// packet kinds
const (
	pktData uint8 = iota
	pktAck
	pktNack
	pktPFC
)

const pfcFrameBytes = 64

// packet lives in the simulator's pool and is referred to by index; queues
// chain packets through next, so enqueueing allocates nothing.
// Sequence numbers are 32-bit, so one flow carries at most 2 GiB (New
// refuses larger flows).
type packet struct {
	at      Time // arrival at the far end of the link it is crossing
	kind    uint8
	prio    uint8 // priority / queue at the switch (data: flow priority)
	ce      bool  // ECN congestion experienced
	cnp     bool  // ACK carries a congestion notification
	pause   bool  // PFC: true PAUSE, false RESUME
	size    int32 // bytes on the wire
	payload int32
	flow    int32
	seq     int32 // data: first payload byte; ack/nack: next expected byte
	dst     int32 // destination host index
	inPort  int32 // ingress port id at the current switch (MMU accounting)
	next    int32 // fifo link
}

type fifo struct {
	head, tail int32
	pkts       int32
	bytes      int64
}

func newFifo() fifo { return fifo{head: -1, tail: -1} }

func (s *Sim) allocPacket() int32 {
	if n := len(s.free); n > 0 {
		id := s.free[n-1]
		s.free = s.free[:n-1]
		return id
	}
	s.pkts = append(s.pkts, packet{})
	return int32(len(s.pkts) - 1)
}

func (s *Sim) freePacket(id int32) {
	s.free = append(s.free, id)
}

func (s *Sim) fifoPush(f *fifo, id int32) {
	p := &s.pkts[id]
	p.next = -1
	if f.tail < 0 {
		f.head = id
	} else {
		s.pkts[f.tail].next = id
	}
	f.tail = id
	f.pkts++
	f.bytes += int64(p.size)
}

func (s *Sim) fifoPop(f *fifo) int32 {
	id := f.head
	p := &s.pkts[id]
	f.head = p.next
	if f.head < 0 {
		f.tail = -1
	}
	f.pkts--
	f.bytes -= int64(p.size)
	return id
}
