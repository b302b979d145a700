package scenario

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ecntune/ecntune/internal/safeio"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
)

// LoadCDF reads a flow-size distribution file: one point per line,
// "<flow size in bytes> <cumulative percent 0..100>", the first line "0 0",
// the last percent 100, both columns strictly increasing, and every size
// after the first at least 1 byte. Blank lines and
// lines starting with '#' are skipped.
func LoadCDF(path string) ([]simenv.CDFPoint, error) {
	data, err := readFile(path, "CDF file", safeio.MaxCDFBytes)
	if err != nil {
		return nil, err
	}
	return ParseCDF(data, path)
}

// ParseCDF parses the content of a CDF file; name labels errors.
func ParseCDF(data []byte, name string) ([]simenv.CDFPoint, error) {
	name = safeio.DisplayPath(name)
	var pts []simenv.CDFPoint
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Fields(t)
		if len(pts) == 0 && !cdfLine(f) {
			// Nothing of the file read as a CDF yet: it may be any file,
			// so its content is not quoted.
			return nil, fmt.Errorf("%s: line %d: not a flow-size CDF: want two numbers \"<size bytes> <cumulative percent>\" per line, got %d words of %d bytes in all",
				name, line, len(f), len(t))
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%s: line %d: want two numbers \"<size bytes> <cumulative percent>\", got %s", name, line, quote(t))
		}
		b, err1 := strconv.ParseFloat(f[0], 64)
		p, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil || !finite(b) || !finite(p) {
			return nil, fmt.Errorf("%s: line %d: %s is not two numbers (want \"<size bytes> <cumulative percent>\")", name, line, quote(t))
		}
		if len(pts) == 0 {
			if b != 0 || p != 0 {
				return nil, fmt.Errorf("%s: line %d: the first point must be \"0 0\", got %s", name, line, quote(t))
			}
		} else {
			prev := pts[len(pts)-1]
			if b <= prev.Bytes {
				return nil, fmt.Errorf("%s: line %d: size %g is not above the previous %g (sizes must strictly increase)", name, line, b, prev.Bytes)
			}
			if p <= prev.Percent {
				return nil, fmt.Errorf("%s: line %d: percent %g is not above the previous %g (percents must strictly increase)", name, line, p, prev.Percent)
			}
			if p > 100 {
				return nil, fmt.Errorf("%s: line %d: percent %g is above 100", name, line, p)
			}
			if b < 1 {
				return nil, fmt.Errorf("%s: line %d: size %g B is below 1 byte; a flow carries at least one", name, line, b)
			}
		}
		pts = append(pts, simenv.CDFPoint{Bytes: b, Percent: p})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(pts) < 2 {
		return nil, fmt.Errorf("%s: a CDF needs at least two points (\"0 0\" and one ending at percent 100), got %d", name, len(pts))
	}
	if last := pts[len(pts)-1]; last.Percent != 100 {
		return nil, fmt.Errorf("%s: the last point must have percent 100, got %g", name, last.Percent)
	}
	return pts, nil
}

// cdfLine reports whether the words of a line are two finite numbers.
func cdfLine(f []string) bool {
	if len(f) != 2 {
		return false
	}
	b, err1 := strconv.ParseFloat(f[0], 64)
	p, err2 := strconv.ParseFloat(f[1], 64)
	return err1 == nil && err2 == nil && finite(b) && finite(p)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// unwrapPathErr drops the path an *os.PathError repeats, since our messages
// already lead with it.
func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// readFile reads the file at path, a what (e.g. "CDF file"), of at most max
// bytes (safeio's caps); errors lead with the path.
func readFile(path, what string, max int64) ([]byte, error) {
	data, err := safeio.ReadFile(path, max)
	return data, readErr(path, what, err)
}

// readErr words an error of safeio.ReadFile or ReadFS: "<path>: cannot read
// <what>: <reason>", the cap named when the file is above it.
func readErr(path, what string, err error) error {
	if err == nil {
		return nil
	}
	var tl *safeio.TooLargeError
	if errors.As(err, &tl) {
		return fmt.Errorf("%s: cannot read %s: larger than %s, the limit for a %s", safeio.DisplayPath(path), what, safeio.FormatSize(tl.Max), what)
	}
	if what == "scenario" && errors.Is(err, fs.ErrNotExist) {
		if near := nearbyFiles(path); len(near) > 0 {
			return fmt.Errorf("%s: cannot read %s: %w (did you mean %s?)", safeio.DisplayPath(path), what, unwrapPathErr(err), strings.Join(near, " or "))
		}
	}
	return fmt.Errorf("%s: cannot read %s: %w", safeio.DisplayPath(path), what, unwrapPathErr(err))
}

// nearbyFiles are up to three files of path's extension, in its folder
// or a folder below it (scenarios/ when path's folder does not exist),
// whose names are within a few edits of path's: nearest first.
func nearbyFiles(path string) []string {
	dir, base := filepath.Dir(path), filepath.Base(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = "scenarios"
	}
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	limit := max(2, len(stem)/3)
	type cand struct {
		path string
		d    int
	}
	var cs []cand
	look := func(d string, depth int) {
		ents, _ := os.ReadDir(d)
		for i, e := range ents {
			if i >= 1000 {
				return // a folder of thousands is not a scenarios folder
			}
			n := e.Name()
			if e.IsDir() || filepath.Ext(n) != ext {
				continue
			}
			if dist := units.EditDistance(stem, strings.TrimSuffix(n, ext)); dist <= limit {
				cs = append(cs, cand{filepath.Join(d, n), dist*2 + depth})
			}
		}
	}
	look(dir, 0)
	subs, _ := os.ReadDir(dir)
	for i, e := range subs {
		if i < 100 && e.IsDir() {
			look(filepath.Join(dir, e.Name()), 1)
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for _, c := range cs[:min(3, len(cs))] {
		out = append(out, safeio.DisplayPath(c.path))
	}
	return out
}
