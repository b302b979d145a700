package await

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilAndReached(t *testing.T) {
	var n atomic.Int64
	go func() {
		for range 5 {
			time.Sleep(2 * time.Millisecond)
			n.Add(1)
		}
	}()
	Until(t, 10*time.Second, "five steps", func() bool { return n.Load() >= 5 })
	Reached(t, "steps", n.Load, 5)
	ft := &fakeT{TB: t}
	func() {
		defer func() { recover() }()
		Until(ft, 30*time.Millisecond, "never", func() bool { return false })
	}()
	if ft.msg != "timed out after 30ms waiting for never" {
		t.Fatalf("failure %q", ft.msg)
	}
}

// fakeT records a fatal failure instead of ending the test.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
