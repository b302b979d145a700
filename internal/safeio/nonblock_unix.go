//go:build unix

package safeio

import "syscall"

// openNonblock makes opening a FIFO return at once rather than wait for a
// writer; it changes nothing for a regular file.
const openNonblock = syscall.O_NONBLOCK
