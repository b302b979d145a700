package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
)

// Output helpers the commands share.

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// fmtSetting is a setting as KMIN/KMAX/PMAX[ headroom HEADROOM][ alpha
// ALPHA], the last two when known (alpha as agent report writes it: 1/2).
func fmtSetting(s env.Setting) string {
	out := fmt.Sprintf("%s/%s/%s", units.FormatBytes(s.KminBytes), units.FormatBytes(s.KmaxBytes), env.FormatPmax(s.Pmax))
	if s.HeadroomBytes > 0 {
		out += " headroom " + units.FormatBytes(s.HeadroomBytes)
	}
	if s.Alpha > 0 {
		out += " alpha " + env.FormatAlpha(s.Alpha)
	}
	return out
}

// printable is a result that prints itself as text or as JSON.
type printable interface {
	WriteText(io.Writer) error
	WriteJSON(io.Writer) error
}

// writeReport prints r to w, as JSON when asJSON.
func writeReport(w io.Writer, r printable, asJSON bool) error {
	if asJSON {
		return r.WriteJSON(w)
	}
	return r.WriteText(w)
}

// warnAll prints each warning about what (a scenario, a policy) on its
// own line.
func warnAll(w io.Writer, what string, warnings []string) {
	for _, m := range warnings {
		fmt.Fprintf(w, "warning: %s: %s\n", what, m)
	}
}
