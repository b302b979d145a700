//go:build !unix

package safeio

// openNonblock: elsewhere opening a file does not wait for a writer.
const openNonblock = 0
