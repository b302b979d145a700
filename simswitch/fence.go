package simswitch

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ecntune/ecntune/gnmipath"
)

// fenceBook keeps, per switch, the highest fencing token a Set carried
// (gnmipath.FenceMetadata), and counts the Sets that carried a lower one:
// a writer that no longer held the switch when its Set arrived, since a
// newer owner had written already. With Config.Fence such Sets are
// refused, as a device-side guard (gNMI's commit confirmed, a token the
// switch checks) would refuse them.
type fenceBook struct {
	mu      sync.Mutex
	high    map[int]int64
	stale   int64
	refused int64
}

// FenceStats are what the switches saw of fencing tokens.
type FenceStats struct {
	// Stale counts Sets whose token was lower than the highest one the
	// switch had seen before (refused or not).
	Stale int64
	// Refused counts the stale Sets refused (Config.Fence).
	Refused int64
}

// FenceStats says how many Sets came with a stale fencing token.
func (s *Server) FenceStats() FenceStats {
	b := &s.r.fences
	b.mu.Lock()
	defer b.mu.Unlock()
	return FenceStats{Stale: b.stale, Refused: b.refused}
}

// fenceOf reads the writer and token of a Set from its metadata (ok false:
// none, or not readable).
func (s *Server) fenceOf(ctx context.Context) (gnmipath.Fence, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(gnmipath.FenceMetadata)
	if len(v) == 0 {
		return gnmipath.Fence{}, false
	}
	f, err := gnmipath.ParseFence(v[len(v)-1])
	if err != nil {
		s.cfg.Warnf("simswitch: a Set with unreadable %s metadata: %v (recorded without a writer)", gnmipath.FenceMetadata, err)
		return gnmipath.Fence{}, false
	}
	return f, true
}

// admit checks a Set's fence against switch sw's highest token so far
// (runner goroutine, so in the order Sets commit): a lower token is
// counted and warned about, and refused with FailedPrecondition when
// Config.Fence is on (a line with why "refused" in the set log). An
// admitted Set raises the switch's highest token. While the Set commits,
// r.writing is its fence, for the set log.
func (s *Server) admit(sw int, f gnmipath.Fence, ok bool) error {
	r := s.r
	r.writing = gnmipath.Fence{}
	if !ok {
		return nil
	}
	b := &r.fences
	b.mu.Lock()
	if b.high == nil {
		b.high = map[int]int64{}
	}
	high := b.high[sw]
	stale := f.Token < high
	refuse := stale && s.cfg.Fence
	if stale {
		b.stale++
	}
	if refuse {
		b.refused++
	} else if f.Token > high {
		b.high[sw] = f.Token
	}
	b.mu.Unlock()
	name := r.infos[sw].Name
	if !stale {
		r.writing = f
		return nil
	}
	if !refuse {
		s.cfg.Warnf("simswitch: WARNING: stale fencing token: %s wrote %s under token %d, below token %d seen there before", f.Writer, name, f.Token, high)
		r.writing = f
		return nil
	}
	s.cfg.Warnf("simswitch: WARNING: stale fencing token: %s's Set on %s under token %d refused, below token %d seen there before", f.Writer, name, f.Token, high)
	r.setLog.write([]SetLogEntry{{TimeNs: time.Now().UnixNano(), Why: "refused", Switch: name, Writer: f.Writer, Token: f.Token}})
	return status.Errorf(codes.FailedPrecondition, "Set refused on %s: fencing token %d of %s is older than token %d this switch has seen; nothing changed",
		name, f.Token, f.Writer, high)
}
