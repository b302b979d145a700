//go:build !unix

package models

import "os"

func keepOwnerAndMode(path string, st os.FileInfo) error { return os.Chmod(path, st.Mode().Perm()) }

func processAlive(int) bool { return true }
