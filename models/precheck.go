package models

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// bbolt trusts its file: a truncated file makes it touch memory past the end
// of the mapping (SIGBUS) and a corrupt page can make it panic. Before
// handing a file to bbolt, precheck reads the two meta pages itself and
// checks that the file is as long as the meta page it will use says.
//
// The layout is bbolt's on-disk format (version 2, native byte order):
// a 16-byte page header (id u64, flags u16, count u16, overflow u32), then
// the meta: magic u32, version u32, page size u32, flags u32, root bucket
// (root page u64, sequence u64), freelist page u64, high-water page u64,
// txid u64, and an FNV-64a checksum of the meta bytes before it.

const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltMetaOffset = 16 // page header size
	boltMetaSum    = 56 // bytes of meta covered by the checksum
	boltMinPage    = 1024
	boltMaxPage    = 1 << 24
)

type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64 // number of pages in use
	txid     uint64
}

// parseMeta decodes and validates one meta page read from buf. A page that
// passes bbolt's own tests (magic, version, checksum) but describes an
// impossible layout is reported with sane false: bbolt would use it.
func parseMeta(buf []byte) (meta boltMeta, why string, sane bool) {
	if len(buf) < boltMetaOffset+boltMetaSum+8 {
		return boltMeta{}, "short meta page", true
	}
	m := buf[boltMetaOffset:]
	ne := binary.NativeEndian
	if ne.Uint32(m[0:]) != boltMagic {
		return boltMeta{}, "no bbolt magic number", true
	}
	if v := ne.Uint32(m[4:]); v != boltVersion {
		return boltMeta{}, fmt.Sprintf("bbolt format version %d, want %d", v, boltVersion), true
	}
	h := fnv.New64a()
	h.Write(m[:boltMetaSum])
	if h.Sum64() != ne.Uint64(m[boltMetaSum:]) {
		return boltMeta{}, "meta page checksum mismatch", true
	}
	meta = boltMeta{
		pageSize: ne.Uint32(m[8:]),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		hwm:      ne.Uint64(m[40:]),
		txid:     ne.Uint64(m[48:]),
	}
	if meta.pageSize < boltMinPage || meta.pageSize > boltMaxPage || meta.pageSize&(meta.pageSize-1) != 0 {
		return boltMeta{}, fmt.Sprintf("implausible page size %d", meta.pageSize), false
	}
	if meta.hwm < 3 || meta.root < 2 || meta.root >= meta.hwm {
		return boltMeta{}, fmt.Sprintf("root page %d outside the %d pages in use", meta.root, meta.hwm), false
	}
	const noFreelist = ^uint64(0)
	if meta.freelist != noFreelist && (meta.freelist < 2 || meta.freelist >= meta.hwm) {
		return boltMeta{}, fmt.Sprintf("freelist page %d outside the %d pages in use", meta.freelist, meta.hwm), false
	}
	return meta, "", true
}

// precheck returns nil if path looks like a whole bbolt file, an empty file
// (size 0, which bbolt initialises on a writable open), and otherwise an
// ErrCorrupt naming the file and what is wrong with it.
func precheck(path string) (empty bool, err error) { return CheckBoltFile(path, "ecntune registry") }

// CheckBoltFile is precheck for any bbolt file, what naming what it should
// be in the error ("ecntune agent database"): call it before bolt.Open.
func CheckBoltFile(path, what string) (empty bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	size := st.Size()
	if size == 0 {
		return true, nil
	}
	if !st.Mode().IsRegular() {
		return false, errorf(ErrCorrupt, "%s is not a regular file", path)
	}
	bf := boltFile{f: f, path: path, size: size, what: what}
	m0, why0, err := bf.firstMeta()
	if err != nil {
		return false, err
	}
	m1, why1, err := bf.secondMeta(m0, why0)
	if err != nil {
		return false, err
	}
	use, err := bf.chooseMeta(m0, why0, m1, why1)
	if err != nil {
		return false, err
	}
	need := int64(use.hwm) * int64(use.pageSize)
	if need/int64(use.pageSize) != int64(use.hwm) || need > size {
		return false, bf.bad("truncated: the database says it uses %d pages of %d bytes (%d bytes) but the file has %d bytes",
			use.hwm, use.pageSize, need, size)
	}
	return false, nil
}

// boltFile is an open file precheck reads, of size bytes.
type boltFile struct {
	f    *os.File
	path string
	size int64
	what string
}

// bad is the ErrCorrupt of a file that is not a usable registry.
func (bf boltFile) bad(format string, a ...any) error {
	return errorf(ErrCorrupt, "%s is not a usable %s: %s", bf.path, bf.what, fmt.Sprintf(format, a...))
}

// firstMeta reads the meta page at the start of the file: m0, or why0 what
// is wrong with it; an error when the file is too short or bbolt would use
// a page describing an impossible layout.
func (bf boltFile) firstMeta() (m0 boltMeta, why0 string, err error) {
	first := make([]byte, 4096)
	n, err := bf.f.ReadAt(first, 0)
	if err != nil && err != io.EOF {
		return boltMeta{}, "", fmt.Errorf("read %s: %w", bf.path, err)
	}
	first = first[:n]
	if n < boltMetaOffset+boltMetaSum+8 {
		return boltMeta{}, "", bf.bad("file is %d bytes, too short for a bbolt database (truncated or not a database)", bf.size)
	}
	m0, why0, sane := parseMeta(first)
	if !sane {
		return boltMeta{}, "", bf.bad("first meta page: %s", why0)
	}
	return m0, why0, nil
}

// secondMeta finds the second meta page, given the first (m0, or what is
// wrong with it, why0); why1 says why none was found.
func (bf boltFile) secondMeta(m0 boltMeta, why0 string) (m1 boltMeta, why1 string, err error) {
	// The second meta page sits one page in; its position depends on the
	// page size, which only a valid meta page tells. Try the first page's
	// claim, then every size bbolt can use.
	why1 = "second meta page not found"
	try := []int64{}
	if why0 == "" {
		try = append(try, int64(m0.pageSize))
	}
	for ps := int64(boltMinPage); ps <= boltMaxPage; ps <<= 1 {
		try = append(try, ps)
	}
	buf := make([]byte, boltMetaOffset+boltMetaSum+8)
	for _, off := range try {
		if off+int64(len(buf)) > bf.size {
			continue
		}
		if _, err := bf.f.ReadAt(buf, off); err != nil {
			return boltMeta{}, "", fmt.Errorf("read %s: %w", bf.path, err)
		}
		m, why, sane := parseMeta(buf)
		if !sane && (why0 != "" || off == int64(m0.pageSize)) {
			return boltMeta{}, "", bf.bad("second meta page: %s", why)
		}
		if why == "" && int64(m.pageSize) == off {
			return m, "", nil
		} else if why0 == "" && off == int64(m0.pageSize) {
			why1 = why
		}
	}
	return m1, why1, nil
}

// chooseMeta picks the meta page bbolt will use: the valid one, or of two
// the later transaction; both must agree on the page size.
func (bf boltFile) chooseMeta(m0 boltMeta, why0 string, m1 boltMeta, why1 string) (boltMeta, error) {
	var use boltMeta
	switch {
	case why0 != "" && why1 != "":
		if why0 == "no bbolt magic number" {
			return boltMeta{}, bf.bad("not a bbolt database (no bbolt magic number at the start)")
		}
		return boltMeta{}, bf.bad("both meta pages are damaged (%s; %s)", why0, why1)
	case why0 != "":
		use = m1
	case why1 != "":
		use = m0
	default:
		use = m0
		if m1.txid > m0.txid {
			use = m1
		}
	}
	if why0 == "" && why1 == "" && m0.pageSize != m1.pageSize {
		return boltMeta{}, bf.bad("meta pages disagree on the page size (%d and %d)", m0.pageSize, m1.pageSize)
	}
	return use, nil
}
