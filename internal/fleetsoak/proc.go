package fleetsoak

import "github.com/ecntune/ecntune/internal/childproc"

// proc is one run of a child process (internal/childproc).
type proc = childproc.Proc

var start, lastLines = childproc.Start, childproc.LastLines
