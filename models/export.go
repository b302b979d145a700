package models

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// An export file carries one model version from one registry to another.
// It is self-describing and checked end to end; all integers big-endian:
//
//	magic            8 bytes  "\x89ECNTUNE" (a high byte first, as in PNG, so
//	                          7-bit or text-mode copies are caught at once)
//	format version   uint32   exportVersion
//	metadata length  uint32   M, at most maxExportMeta
//	metadata         M bytes  the Model as JSON (the weights excluded)
//	weights length   uint64   W, at most the largest bbolt value
//	weights          W bytes
//	checksum         32 bytes sha256 of every byte before it
//
// Nothing may follow the checksum.
const (
	exportMagic   = "\x89ECNTUNE"
	exportVersion = 1
	maxExportMeta = 4 << 20
)

// ErrBadExport marks a file that is not a whole, intact model export.
var ErrBadExport = errors.New("bad model export")

// WriteExport writes m (metadata and weights) in the export format. The
// ID and status are written for information only: Import assigns a new ID
// and stores the model as a candidate.
func WriteExport(w io.Writer, m Model) error {
	if m.WeightsSHA256 != digest(m.Weights) || m.WeightsSize != int64(len(m.Weights)) {
		return errorf(ErrInvalid, "model %s: weights do not match their recorded sha256 and size", m.Ref())
	}
	meta, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("model %s: encode metadata: %w", m.Ref(), err)
	}
	if len(meta) > maxExportMeta {
		return errorf(ErrInvalid, "model %s: metadata is %d bytes, the export format allows %d", m.Ref(), len(meta), maxExportMeta)
	}
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 64<<10)
	var hdr [16]byte
	copy(hdr[:8], exportMagic)
	binary.BigEndian.PutUint32(hdr[8:], exportVersion)
	binary.BigEndian.PutUint32(hdr[12:], uint32(len(meta)))
	bw.Write(hdr[:])
	bw.Write(meta)
	var wl [8]byte
	binary.BigEndian.PutUint64(wl[:], uint64(len(m.Weights)))
	bw.Write(wl[:])
	bw.Write(m.Weights)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export %s: %w", m.Ref(), err)
	}
	if _, err := w.Write(h.Sum(nil)); err != nil {
		return fmt.Errorf("export %s: %w", m.Ref(), err)
	}
	return nil
}

// ReadExport reads and verifies one export: magic, format version, lengths,
// the trailing sha256 over everything, the weights' own sha256 and every
// metadata field. It never trusts a length before the bytes arrive, so a
// corrupt length cannot make it allocate more than the input holds.
func ReadExport(rd io.Reader) (Model, error) {
	bad := func(format string, a ...any) (Model, error) {
		return Model{}, fmt.Errorf("%w: %s", ErrBadExport, fmt.Sprintf(format, a...))
	}
	avail := fileBytes(rd)
	src := bufio.NewReaderSize(rd, 64<<10)
	h := sha256.New()
	tr := io.TeeReader(src, h)
	var hdr [16]byte
	if n, err := io.ReadFull(tr, hdr[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return bad("empty input, want a model export")
		}
		if k := min(n, len(exportMagic)); string(hdr[:k]) != exportMagic[:k] {
			return bad("not an ecntune model export (no %q magic at the start)", exportMagic[1:])
		}
		return bad("truncated in the header (%d of 16 bytes)", n)
	}
	if string(hdr[:8]) != exportMagic {
		return bad("not an ecntune model export (no %q magic at the start)", exportMagic[1:])
	}
	if v := binary.BigEndian.Uint32(hdr[8:]); v != exportVersion {
		return bad("export format version %d, this ecntune reads version %d", v, exportVersion)
	}
	ml := binary.BigEndian.Uint32(hdr[12:])
	if ml == 0 || ml > maxExportMeta {
		return bad("metadata length %d, want 1..%d", ml, maxExportMeta)
	}
	var meta bytes.Buffer
	if n, err := io.CopyN(&meta, tr, int64(ml)); err != nil {
		return bad("truncated in the metadata (%d of %d bytes)", n, ml)
	}
	var wl [8]byte
	if _, err := io.ReadFull(tr, wl[:]); err != nil {
		return bad("truncated before the weights length")
	}
	w := binary.BigEndian.Uint64(wl[:])
	if w == 0 || w > maxWeightBytes {
		return bad("weights length %d, want 1..%d", w, int64(maxWeightBytes))
	}
	// A length that disagrees with the metadata's is refused before the
	// weights are read (when the metadata decodes at all; otherwise the
	// checksum below says the file is damaged).
	var declared struct {
		WeightsSize int64 `json:"weights_size"`
	}
	if json.Unmarshal(meta.Bytes(), &declared) == nil && declared.WeightsSize != int64(w) {
		return bad("weights length %d, but its metadata records %d bytes of weights", w, declared.WeightsSize)
	}
	// The weights are read into one buffer of their size when the input
	// is a file that holds them (a 1 GiB import then takes 1 GiB, not the
	// 2 GiB a growing buffer would); otherwise the buffer grows as bytes
	// arrive, never trusting the length.
	var weights []byte
	if avail >= int64(len(hdr))+int64(ml)+int64(len(wl))+int64(w)+sha256.Size {
		weights = make([]byte, w)
		if n, err := io.ReadFull(tr, weights); err != nil {
			return bad("truncated in the weights (%d of %d bytes)", n, w)
		}
	} else {
		var b bytes.Buffer
		if n, err := io.CopyN(&b, tr, int64(w)); err != nil {
			return bad("truncated in the weights (%d of %d bytes)", n, w)
		}
		weights = b.Bytes()
	}
	var sum [32]byte
	if n, err := io.ReadFull(src, sum[:]); err != nil {
		return bad("truncated in the checksum (%d of 32 bytes)", n)
	}
	if !bytes.Equal(sum[:], h.Sum(nil)) {
		return bad("sha256 checksum mismatch: the file was damaged after export")
	}
	if _, err := src.ReadByte(); err == nil {
		return bad("unexpected bytes after the checksum")
	} else if err != io.EOF {
		return Model{}, fmt.Errorf("read model export: %w", err)
	}
	var m Model
	dec := json.NewDecoder(&meta)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return bad("metadata is not a model record: %v", err)
	}
	m.Weights = weights
	if err := validateMeta(&m); err != nil {
		return Model{}, fmt.Errorf("%w: %w", ErrBadExport, err)
	}
	if m.Version <= 0 {
		return bad("metadata has version %d, want a positive version", m.Version)
	}
	if got := digest(m.Weights); got != m.WeightsSHA256 || m.WeightsSize != int64(len(m.Weights)) {
		return bad("weights of %s do not match the sha256 and size in its metadata", m.Ref())
	}
	return m, nil
}

// fileBytes is how many bytes rd holds from where it is read when it is a
// regular file, else -1.
func fileBytes(rd io.Reader) int64 {
	f, ok := rd.(*os.File)
	if !ok {
		return -1
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1
	}
	return st.Size() - pos
}

// Export writes the model ref names, weights verified, to w. It returns the
// exported model's metadata.
func (r *Registry) Export(ref string, w io.Writer) (Model, error) {
	m, err := r.Resolve(ref)
	if err != nil {
		return Model{}, err
	}
	if err := WriteExport(w, m); err != nil {
		return Model{}, err
	}
	m.Weights = nil
	return m, nil
}

// ExportFile exports ref to path atomically: it writes a temporary file in
// the same directory, syncs it and renames it over path.
func (r *Registry) ExportFile(ref, path string) (Model, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return Model{}, fmt.Errorf("export to %s: %w", path, err)
	}
	tmp := f.Name()
	m, err := r.Export(ref, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return Model{}, fmt.Errorf("export to %s: %w", path, err)
	}
	return m, nil
}

// ImportResult says what Import did.
type ImportResult struct {
	// Model is the model as stored here (or as found, when Existing),
	// without weights.
	Model Model
	// FileVersion is the version recorded in the export.
	FileVersion int
	// Deleted: FileVersion was used here before and deleted (a version
	// number is never reused), so Renumbered too.
	Deleted bool
	// Renumbered is true when FileVersion was taken here by other weights:
	// the model was stored under the next free version of its name.
	Renumbered bool
	// Existing is true when this registry already holds the same name,
	// version and weights: nothing was written.
	Existing bool
}

// Import reads one export, verifies it completely and only then stores it,
// so a truncated or corrupt file leaves the registry untouched. The model
// keeps its name and version if that version was never used here, and
// gets the next free version of its name when the version is taken by
// different weights or was deleted here (a version number names one set
// of weights for good: the promotion history and agents' audit entries
// name it). It is stored as a candidate
// with a new ID; its creation time and provenance are kept.
func (r *Registry) Import(rd io.Reader) (ImportResult, error) {
	m, err := ReadExport(rd)
	if err != nil {
		return ImportResult{}, err
	}
	return r.ImportModel(m)
}

// ImportModel stores a model read by ReadExport the way Import does. It
// lets a caller verify a file before it opens (or creates) a registry.
// The model is validated again, weights against their sha256 included.
func (r *Registry) ImportModel(m Model) (ImportResult, error) {
	if err := validateMeta(&m); err != nil {
		return ImportResult{}, err
	}
	if !slices.Contains(KnownAlgorithms, m.Algorithm) {
		return ImportResult{}, errorf(ErrInvalid, "import of model %s: field algorithm is %q, not one this ecntune trains (%s)",
			m.Name, m.Algorithm, strings.Join(KnownAlgorithms, ", "))
	}
	if !specRE.MatchString(m.ObsSpec) || !specRE.MatchString(m.ActSpec) {
		return ImportResult{}, errorf(ErrInvalid, "import of model %s: spec versions %q, %q are not of the form NAME-vN", m.Name, m.ObsSpec, m.ActSpec)
	}
	if m.Version <= 0 {
		return ImportResult{}, errorf(ErrInvalid, "import of model %s: version %d, want a positive version", m.Name, m.Version)
	}
	if got := digest(m.Weights); got != m.WeightsSHA256 || m.WeightsSize != int64(len(m.Weights)) {
		return ImportResult{}, errorf(ErrInvalid, "import of model %s: weights do not match their recorded sha256 and size", m.Ref())
	}
	res := ImportResult{FileVersion: m.Version}
	m.ID = 0
	m.Status = StatusCandidate
	err := r.update(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bktVersions).Get(versionKey(m.Name, m.Version)); len(v) == 8 {
			old, err := r.loadMeta(tx, binary.BigEndian.Uint64(v), false)
			if err != nil {
				return err
			}
			if old.WeightsSHA256 == m.WeightsSHA256 {
				res.Existing = true
				res.Model = old
				return nil
			}
			// the same weights imported before under another version (the
			// file's was taken): that version, not one more copy each time
			// the file is imported again
			c := tx.Bucket(bktVersions).Cursor()
			prefix := versionPrefix(m.Name)
			for k, id := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, id = c.Next() {
				if len(id) != 8 {
					continue
				}
				other, err := r.loadMeta(tx, binary.BigEndian.Uint64(id), false)
				if err != nil {
					return err
				}
				if other.WeightsSHA256 == m.WeightsSHA256 {
					res.Existing = true
					res.Model = other
					return nil
				}
			}
			m.Version = 0
			res.Renumbered = true
		} else if st, _, err := r.loadName(tx, m.Name); err == nil && m.Version < st.NextVersion {
			m.Version = 0 // used here before, and deleted: not reused
			res.Renumbered, res.Deleted = true, true
		}
		return r.insert(tx, &m)
	})
	if err != nil {
		return ImportResult{}, err
	}
	if !res.Existing {
		m.Weights = nil
		res.Model = m
	}
	return res, nil
}

// ImportFile imports the export file at path; errors name the file.
func (r *Registry) ImportFile(path string) (ImportResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImportResult{}, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	res, err := r.Import(f)
	if err != nil {
		return ImportResult{}, fmt.Errorf("import %s: %w", path, err)
	}
	return res, nil
}
