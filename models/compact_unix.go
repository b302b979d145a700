//go:build unix

package models

import (
	"errors"
	"os"
	"syscall"
)

// keepOwnerAndMode gives path the mode and, where it can, the owner of
// the file st describes.
func keepOwnerAndMode(path string, st os.FileInfo) error {
	if err := os.Chmod(path, st.Mode().Perm()); err != nil {
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		if err := os.Chown(path, int(sys.Uid), int(sys.Gid)); err != nil && !errors.Is(err, os.ErrPermission) {
			return err
		}
	}
	return nil
}

// processAlive says whether a process of that pid runs (signal 0).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
