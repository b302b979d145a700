package models

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Space is what a registry file holds, by kind, in bytes. bbolt never
// gives space back to the file system: a checkpoint replaced or deleted
// leaves its pages free for later writes in the file (Free), until
// Compact rewrites it.
type Space struct {
	File        int64 // the file's size on disk
	Versions    int   // model versions stored
	Weights     int64 // their weights
	Metadata    int64 // their metadata, names and promotion history
	Checkpoints int   // unfinished runs' checkpoints
	States      int64 // their training states (a DDQN state holds its replay memory)
	// Free is the part of the file holding nothing: free pages and the
	// room bbolt grew the file by ahead of need.
	Free int64
}

// Used is the part of the file that holds data (File less Free).
func (s Space) Used() int64 { return s.File - s.Free }

// Wasteful reports whether compacting would give back enough to be worth
// a rewrite of the file: at least 1 MiB, and more than half of the file.
func (s Space) Wasteful() bool { return s.Free >= 1<<20 && 2*s.Free > s.File }

// Space measures the registry file.
func (r *Registry) Space() (Space, error) {
	var s Space
	st, err := os.Stat(r.path)
	if err != nil {
		return s, fmt.Errorf("registry %s: %w", r.path, err)
	}
	s.File = st.Size()
	err = r.view(func(tx *bolt.Tx) error {
		// the two meta pages and the root page listing the buckets
		alloc := int64(3 * tx.DB().Info().PageSize)
		alloc += freelistBytes(tx)
		err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			bs := b.Stats()
			alloc += int64(bs.BranchAlloc + bs.LeafAlloc)
			return b.ForEach(func(k, v []byte) error {
				switch string(name) {
				case string(bktWeights):
					s.Weights += int64(len(v))
				case string(bktCheckpoints):
					s.Checkpoints++
					s.States += int64(len(v))
				default:
					if string(name) == string(bktModels) {
						s.Versions++
					}
					s.Metadata += int64(len(k) + len(v))
				}
				return nil
			})
		})
		s.Free = max(0, s.File-alloc)
		return err
	})
	return s, err
}

// freelistBytes is the size of the file's freelist page(s): a page header
// and one page id per free or pending page, as bbolt writes it (the
// freelist is loaded at open, read-only too, so the count is known).
func freelistBytes(tx *bolt.Tx) int64 {
	st := tx.DB().Stats()
	ps := int64(tx.DB().Info().PageSize)
	n := int64(st.FreePageN + st.PendingPageN)
	if n == 0 {
		return 0
	}
	b := 16 + 8*n // page header and ids
	if n >= 0xFFFF {
		b += 8 // the count moves into the first id slot
	}
	return (max(b, int64(st.FreelistInuse)) + ps - 1) / ps * ps
}

// Compact rewrites the registry at path into a new file holding only the
// data in use and puts it in the old one's place (same name, same mode),
// when worth says the space measured is worth it (nil: always). It holds
// the registry's write lock throughout: nothing is written to the old
// file meanwhile, and a process that waited for that lock opens the new
// file (Open checks that the file it locked is still the one named
// path). It reports the space before and after (after equals before when
// it did nothing).
func Compact(path string, opts Options, worth func(Space) bool) (before, after Space, err error) {
	opts.ReadOnly, opts.MustExist = false, true
	r, err := Open(path, opts)
	if err != nil {
		return before, after, err
	}
	defer func() {
		if cerr := r.Close(); err == nil {
			err = cerr
		}
	}()
	if before, err = r.Space(); err != nil {
		return before, before, err
	}
	if worth != nil && !worth(before) {
		return before, before, nil
	}
	if err := r.compactInto(path, opts); err != nil {
		return before, before, err
	}
	// Measure the new file as a new session would see it.
	n, err := Open(path, Options{ReadOnly: true, Timeout: opts.Timeout})
	if err != nil {
		return before, before, err
	}
	defer n.Close()
	after, err = n.Space()
	return before, after, err
}

// compactInto copies r into a temporary file beside path and renames it
// over path, r's lock still held.
func (r *Registry) compactInto(path string, opts Options) error {
	db, err := r.handle()
	if err != nil {
		return err
	}
	// The file itself, not a symlink to it: renamed over the link, the
	// copy would split the registry (promotions into the copy, agents
	// reading the original).
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(real)
	if err != nil {
		return err
	}
	removeStaleCompactions(real)
	tmp := real + ".compact-" + strconv.Itoa(os.Getpid())
	dst, err := bolt.Open(tmp, st.Mode().Perm(), &bolt.Options{NoSync: opts.NoSync, Timeout: opts.Timeout})
	if err != nil {
		os.Remove(tmp) // a failed open can leave it (a full disk)
		return fmt.Errorf("compact registry %s: %w", path, err)
	}
	err = guard(path, func() error { return bolt.Compact(dst, db, 0) })
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// the original's mode and owner (the umask took group write, and
		// an agent running as the file's owner could no longer open it)
		err = keepOwnerAndMode(tmp, st)
	}
	if err == nil {
		err = os.Rename(tmp, real)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compact registry %s: %w", path, err)
	}
	if d, derr := os.Open(filepath.Dir(real)); derr == nil {
		_ = d.Sync() // the rename, on file systems that need it
		d.Close()
	}
	return nil
}

// removeStaleCompactions removes the temporary files of compactions of
// path that a killed or interrupted process left (path.compact-PID, PID no
// longer running): each run used its own, and they piled up unseen.
func removeStaleCompactions(path string) {
	olds, _ := filepath.Glob(path + ".compact-*")
	for _, o := range olds {
		pid, err := strconv.Atoi(strings.TrimPrefix(o, path+".compact-"))
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		os.Remove(o)
	}
}
