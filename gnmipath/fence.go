package gnmipath

import (
	"fmt"
	"strconv"
	"strings"
)

// FenceMetadata is the gRPC metadata key under which an agent in a fleet
// sends, with every Set, the writer it is and the fencing token it holds
// for the switch ("member/token"): a switch (simswitch) can record who
// wrote what under which token, and refuse a token older than one it has
// seen. Real switches ignore unknown metadata.
const FenceMetadata = "ecntune-fence"

// Fence is a writer and its fencing token, as FenceMetadata carries them.
type Fence struct {
	Writer string
	Token  int64
}

// String is the metadata value, "writer/token".
func (f Fence) String() string { return f.Writer + "/" + strconv.FormatInt(f.Token, 10) }

// ParseFence reads a FenceMetadata value.
func ParseFence(s string) (Fence, error) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return Fence{}, fmt.Errorf("%s %q: want writer/token", FenceMetadata, s)
	}
	tok, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || tok <= 0 {
		return Fence{}, fmt.Errorf("%s %q: token is not a positive integer", FenceMetadata, s)
	}
	return Fence{Writer: s[:i], Token: tok}, nil
}
