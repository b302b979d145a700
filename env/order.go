package env

import (
	"cmp"
	"unicode"
)

// NaturalCompare orders names with their numbers by value: Ethernet4 before
// Ethernet12, leaf2 before leaf10, Eth1/2 before Eth1/10 (leading zeros
// aside, the same digits compare equal). It is the one order of ports,
// switches and queues everywhere: the guard's plans, logs, the dashboard,
// reports, histories.
func NaturalCompare(a, b string) int {
	if a == b {
		return 0 // most keys of a sort share their switch
	}
	for a != "" && b != "" {
		ra, rb := rune(a[0]), rune(b[0])
		if unicode.IsDigit(ra) && unicode.IsDigit(rb) {
			i, j := digitRun(a), digitRun(b)
			na, nb := trimZeros(a[:i]), trimZeros(b[:j])
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[i:], b[j:]
			continue
		}
		if ra != rb {
			return cmp.Compare(ra, rb)
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// CompareQueueKeys orders queue keys by switch, then port, naturally, then
// queue index.
func CompareQueueKeys(a, b QueueKey) int {
	return cmp.Or(NaturalCompare(a.Target, b.Target), NaturalCompare(a.Port, b.Port), cmp.Compare(a.Queue, b.Queue))
}

// QueueKeyLess is CompareQueueKeys(a, b) < 0, for sort.Slice.
func QueueKeyLess(a, b QueueKey) bool { return CompareQueueKeys(a, b) < 0 }

func digitRun(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
