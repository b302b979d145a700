// Package safeio reads configuration files with bounded memory: ReadFile and ReadFS stop at a size cap, and DecodeYAML parses YAML into a node tree after checking that alias expansion stays small.
//
// A file larger than its cap is an error naming the file and the cap; the
// read goes through io.LimitReader, so an endless source (/dev/zero, a
// FIFO) costs at most the cap plus one byte. YAML aliases are counted on
// the parsed node tree, each alias as the size of what it stands for,
// before anything is decoded, so a "billion laughs" document is refused
// after a parse that is linear in its size.
//
// The caps the loaders use (scenario files, their CDF, topology and flow
// files, ns-3 configs) are the constants below; callers may pass others.
//
// CheckYAML holds a parsed document to the Go type it is to be decoded
// into, in one walk: unknown keys (with the keys allowed there), values of
// the wrong type and keys given twice, each with its field path and line,
// and the line of every field path, to place errors found later.
package safeio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Caps, in bytes, for the files ecntune reads. They are far above any real
// file of each kind and far below what would exhaust a machine's memory.
const (
	// MaxYAMLBytes caps a YAML file (scenario, agent config): a few KB in
	// practice; 4 MiB still holds host lists for a 65,536-host fabric.
	MaxYAMLBytes = 4 << 20
	// MaxYAMLNodes caps the nodes of a YAML document with every alias
	// expanded (a mapping counts itself, its keys and its values): room
	// for several host lists of 65,536 names, and a parsed tree of about
	// 100 MB at most.
	MaxYAMLNodes = 1 << 19
	// MaxConfigBytes caps a small key-value file (an ns-3 config.txt).
	MaxConfigBytes = 1 << 20
	// MaxCDFBytes caps a flow-size CDF file (tens of lines in practice).
	MaxCDFBytes = 1 << 20
	// MaxTopologyBytes caps a topology file (a 65,536-node fabric with a
	// few links per node takes about 10 MB).
	MaxTopologyBytes = 32 << 20
	// MaxFlowFileBytes caps a flow (trace) file: about 2 million flows.
	MaxFlowFileBytes = 64 << 20
	// MaxPEMBytes caps a PEM file (a TLS CA bundle, certificate or key):
	// a full public CA bundle is about 250 KB.
	MaxPEMBytes = 1 << 20
)

// TooLargeError reports a file above its cap.
type TooLargeError struct {
	Path string
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %s, the limit for this file", DisplayPath(e.Path), FormatSize(e.Max))
}

// DisplayPath is path as an error message shows it: as it is when every
// byte of it is printable, else Go-quoted ("a\nb"), so that control bytes
// in a file name cannot forge or hide lines of a log or a terminal.
func DisplayPath(path string) string {
	if q := strconv.Quote(path); q[1:len(q)-1] != path {
		return q
	}
	return path
}

// DisplayPathError is err with the path of an *fs.PathError about path
// shown by DisplayPath (errors.Is and errors.As see the same error).
func DisplayPathError(err error, path string) error {
	var pe *fs.PathError
	if d := DisplayPath(path); d != path && errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: d, Err: pe.Err}
	}
	return err
}

// FormatSize renders a cap: "4 MiB", "512 KiB", "100 B".
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// ReadFile reads the file at path, failing with a *TooLargeError when it
// holds more than max bytes. Open errors are returned as os.Open gives
// them (*fs.PathError).
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, DisplayPathError(err, path)
	}
	defer f.Close()
	return readCapped(f, path, max)
}

// NotRegularError reports a file that is a device, a named pipe, a
// directory or a socket where a regular file is wanted.
type NotRegularError struct {
	Path string
	Kind string // a device, a named pipe, a directory, a socket, ...
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: not a regular file (%s)", DisplayPath(e.Path), e.Kind)
}

// fileKind names the kind of a file that is not regular.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a plain file: " + m.Type().String()
}

// ReadRegularFile is ReadFile for a file that must be a regular file (a
// TLS certificate or key): a device (/dev/zero), a named pipe, a directory
// or a socket is refused with a *NotRegularError before a byte is read.
// The file is opened without waiting for a writer and checked once open,
// so that swapping it for a FIFO after a check cannot block the read.
func ReadRegularFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, DisplayPathError(err, path)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, DisplayPathError(err, path)
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Kind: fileKind(fi.Mode())}
	}
	return readCapped(f, path, max)
}

// ReadFS is ReadFile on a file of fsys.
func ReadFS(fsys fs.FS, path string, max int64) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, path, max)
}

// ReadAll reads r to its end, failing with a *TooLargeError (naming name)
// beyond max bytes.
func ReadAll(r io.Reader, name string, max int64) ([]byte, error) {
	return readCapped(r, name, max)
}

func readCapped(r io.Reader, name string, max int64) ([]byte, error) {
	if max < 0 {
		max = 0
	}
	var buf bytes.Buffer
	if st, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
			if fi.Size() > max {
				return nil, &TooLargeError{Path: name, Max: max}
			}
			buf.Grow(int(fi.Size()) + 1)
		}
	}
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DisplayPath(name), err)
	}
	if n > max {
		return nil, &TooLargeError{Path: name, Max: max}
	}
	return buf.Bytes(), nil
}

// ErrEmptyYAML is returned by DecodeYAML for a document with no content.
var ErrEmptyYAML = errors.New("the document is empty")

// YAMLError is a problem DecodeYAML found at a line of the document.
type YAMLError struct {
	Line int
	Msg  string
}

func (e *YAMLError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// DecodeYAML parses data, which must hold exactly one YAML document, into a
// node tree and returns the document's root (the node under the document
// node). It refuses a document whose nodes, with every alias expanded,
// number more than maxNodes (0: MaxYAMLNodes), before anything would
// decode it. ErrEmptyYAML when there is no content; yaml.v3's own errors
// for syntax; *YAMLError for a second document or too many nodes.
func DecodeYAML(data []byte, maxNodes int) (*yaml.Node, error) {
	if maxNodes <= 0 {
		maxNodes = MaxYAMLNodes
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrEmptyYAML
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, &YAMLError{Line: extra.Line, Msg: "only one YAML document is allowed"}
	}
	if len(doc.Content) != 1 {
		return nil, ErrEmptyYAML
	}
	root := doc.Content[0]
	if n, ok := ExpandedNodes(root, maxNodes); !ok {
		return nil, &YAMLError{Msg: fmt.Sprintf("the document expands to more than %d nodes (%d counted so far; aliases count as what they stand for)", maxNodes, n)}
	}
	return root, nil
}

// ExpandedNodes counts the nodes of the tree under n as a decoder would
// see them, every alias replaced by a copy of its anchor's tree. It stops
// and reports false once the count passes limit. It takes time linear in
// the size of the tree as parsed (each anchored node is counted once and
// remembered), however far aliases would multiply it.
func ExpandedNodes(n *yaml.Node, limit int) (int, bool) {
	c := counter{memo: map[*yaml.Node]int{}, active: map[*yaml.Node]bool{}, limit: limit}
	total := c.count(n)
	return total, total <= limit
}

type counter struct {
	memo   map[*yaml.Node]int
	active map[*yaml.Node]bool
	limit  int
}

// count returns the expanded size of n, or limit+1 as soon as it is known
// to be above limit (sums saturate there, so nothing overflows).
func (c *counter) count(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	if v, ok := c.memo[n]; ok {
		return v
	}
	if c.active[n] {
		// An alias to an enclosing node: infinite expansion (yaml.v3
		// refuses these too).
		return c.limit + 1
	}
	c.active[n] = true
	total := 1
	if n.Kind == yaml.AliasNode {
		total = c.count(n.Alias) // the alias is replaced by its target
	} else {
		for _, ch := range n.Content {
			total += c.count(ch)
			if total > c.limit {
				total = c.limit + 1
				break
			}
		}
	}
	delete(c.active, n)
	c.memo[n] = total
	return total
}
