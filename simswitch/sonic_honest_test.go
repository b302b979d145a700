package simswitch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmic/pkg/api/target"
	"google.golang.org/grpc/status"

	"github.com/ecntune/ecntune/internal/sonictest"
)

// The imitation kept honest: the same reads put to simswitch --device sonic
// and to the real sonic-gnmi server (internal/sonictest; skipped without
// SONIC_DIR) must come out alike: the same status code; on success as many
// notifications, each with the same prefix target and the same update paths
// in some order, the same encoding, every value a JSON object of strings
// keyed alike (digits and hex object ids written N, since the two fabrics
// differ in port numbers) and no field the real server lacks. The real
// server gets the tool's seed with periodic watermarks added (a switch with
// watermark polling on has them). Writes cannot be compared: the tool runs
// no config updater.
func TestRealSonicImitationMatchesServer(t *testing.T) {
	real := sonictest.Start(t, seedWithPeriodicWatermarks(t))
	_, sim := start(t, "", func(c *Config) { c.Device = "sonic" })
	for _, p := range sonicProbes() {
		t.Run(p.name, func(t *testing.T) {
			want, got := p.run(t, real.Addr), p.run(t, sim)
			t.Logf("real sonic-gnmi: %s", want)
			if why := got.unlike(want, p.subsetKeys); why != "" {
				t.Errorf("%s: %s\n  real sonic-gnmi: %s\n  simswitch:       %s", p.name, why, want, got)
			}
		})
	}
}

// seedWithPeriodicWatermarks is the tool's seed with a
// PERIODIC_WATERMARKS entry (shared watermark) for every queue.
func seedWithPeriodicWatermarks(t *testing.T) []byte {
	dir, _ := sonictest.Tools(t)
	b, err := os.ReadFile(filepath.Join(dir, "seed", "seed.json"))
	if err != nil {
		t.Fatal(err)
	}
	var seed map[string]map[string]map[string]string
	if err := json.Unmarshal(b, &seed); err != nil {
		t.Fatal(err)
	}
	for _, oid := range seed["COUNTERS_DB"]["COUNTERS_QUEUE_NAME_MAP"] {
		seed["COUNTERS_DB"]["PERIODIC_WATERMARKS:"+oid] = map[string]string{"SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "0"}
	}
	if b, err = json.Marshal(seed); err != nil {
		t.Fatal(err)
	}
	return b
}

// sonicProbe is one read and how to describe its answer.
type sonicProbe struct {
	name string
	run  func(t *testing.T, addr string) answer
	// subsetKeys: simswitch's keys may be fewer kinds than the real
	// switch's (its BUFFER_PG binds PG by PG, a real one often a range).
	subsetKeys bool
}

func sonicProbes() []sonicProbe {
	get := func(target string, paths ...string) func(t *testing.T, addr string) answer {
		return func(t *testing.T, addr string) answer {
			req := &gnmi.GetRequest{Prefix: &gnmi.Path{Target: target}, Encoding: gnmi.Encoding_JSON_IETF}
			for _, p := range paths {
				req.Path = append(req.Path, &gnmi.Path{Elem: elems(t, p)})
			}
			resp, err := dial(t, addr).Get(ctx5(t), req)
			if err != nil {
				return answer{code: status.Code(err).String()}
			}
			return answerOf(resp.GetNotification(), "")
		}
	}
	sub := func(target string, mode gnmi.SubscriptionMode, sample time.Duration, paths ...string) func(t *testing.T, addr string) answer {
		return func(t *testing.T, addr string) answer {
			return firstSample(t, dial(t, addr), target, mode, sample, paths...)
		}
	}
	sample, change := gnmi.SubscriptionMode_SAMPLE, gnmi.SubscriptionMode_ON_CHANGE
	return []sonicProbe{
		{"get queues of every port", get("COUNTERS_DB", "/COUNTERS/Ethernet*/Queues"), false},
		{"get queues of one port", get("COUNTERS_DB", "/COUNTERS/Ethernet0/Queues"), false},
		{"get port counters of every port", get("COUNTERS_DB", "/COUNTERS/Ethernet*"), false},
		{"get port counters of one port", get("COUNTERS_DB", "/COUNTERS/Ethernet0"), false},
		{"get queue name map", get("COUNTERS_DB", "/COUNTERS_QUEUE_NAME_MAP"), false},
		{"get queue type map", get("COUNTERS_DB", "/COUNTERS_QUEUE_TYPE_MAP"), false},
		{"get PG name map", get("COUNTERS_DB", "/COUNTERS_PG_NAME_MAP"), false},
		{"get PORT table", get("CONFIG_DB", "/PORT"), false},
		{"get QUEUE table", get("CONFIG_DB", "/QUEUE"), false},
		{"get BUFFER_PG table", get("CONFIG_DB", "/BUFFER_PG"), true},
		{"get two paths", get("CONFIG_DB", "/PORT", "/QUEUE"), false},
		{"get an unknown table", get("CONFIG_DB", "/NO_SUCH_TABLE"), false},
		{"get an unknown entry", get("CONFIG_DB", "/WRED_PROFILE/NO_SUCH_PROFILE"), false},
		{"get an unknown field", get("CONFIG_DB", "/PORT/Ethernet0/no_such_field"), false},
		{"get an unknown port", get("COUNTERS_DB", "/COUNTERS/Ethernet999/Queues"), false},
		{"get an unknown database", get("NO_SUCH_DB", "/PORT"), false},
		{"stream counters at 1s", sub("COUNTERS_DB", sample, time.Second, "/COUNTERS/Ethernet*/Queues", "/COUNTERS/Ethernet*"), false},
		{"stream counters at 100ms", sub("COUNTERS_DB", sample, 100*time.Millisecond, "/COUNTERS/Ethernet*/Queues"), false},
		{"stream config on change", sub("CONFIG_DB", change, 0, "/PORT", "/QUEUE", "/BUFFER_PG", "/BUFFER_POOL"), true},
		{"stream counters on change", sub("COUNTERS_DB", change, 0, "/COUNTERS/Ethernet*/Queues"), false},
		{"stream target defined", sub("CONFIG_DB", gnmi.SubscriptionMode_TARGET_DEFINED, 0, "/PORT"), false},
		{"stream an absent table", sub("CONFIG_DB", change, 0, "/NO_SUCH_TABLE"), false},
		{"once counters, target defined", once("COUNTERS_DB", gnmi.SubscriptionMode_TARGET_DEFINED, false, "/COUNTERS/Ethernet*/Queues"), false},
		{"once counters, sample", once("COUNTERS_DB", sample, false, "/COUNTERS/Ethernet*/Queues"), false},
		{"once config, updates only", once("CONFIG_DB", gnmi.SubscriptionMode_TARGET_DEFINED, true, "/PORT"), false},
	}
}

// once describes what a ONCE subscription (its subscriptions in mode,
// updates_only as given) answers until its sync_response.
func once(target string, mode gnmi.SubscriptionMode, updatesOnly bool, paths ...string) func(t *testing.T, addr string) answer {
	return func(t *testing.T, addr string) answer {
		return firstOf(t, dial(t, addr), gnmi.SubscriptionList_ONCE, updatesOnly, target, mode, 0, paths...)
	}
}

// firstSample opens a STREAM subscription and describes what comes until
// its sync_response (or the error that ends it).
func firstSample(t *testing.T, tg *target.Target, tgt string, mode gnmi.SubscriptionMode, iv time.Duration, paths ...string) answer {
	return firstOf(t, tg, gnmi.SubscriptionList_STREAM, false, tgt, mode, iv, paths...)
}

// firstOf is firstSample for a list of mode listMode (updates_only as
// given).
func firstOf(t *testing.T, tg *target.Target, listMode gnmi.SubscriptionList_Mode, updatesOnly bool, tgt string, mode gnmi.SubscriptionMode, iv time.Duration, paths ...string) answer {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := tg.Client.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list := &gnmi.SubscriptionList{Prefix: &gnmi.Path{Target: tgt}, Mode: listMode, UpdatesOnly: updatesOnly, Encoding: gnmi.Encoding_JSON_IETF}
	for _, p := range paths {
		list.Subscription = append(list.Subscription, &gnmi.Subscription{Path: &gnmi.Path{Elem: elems(t, p)}, Mode: mode, SampleInterval: uint64(iv)})
	}
	if err := st.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: list}}); err != nil {
		t.Fatal(err)
	}
	var notes []*gnmi.Notification
	for {
		m, err := st.Recv()
		if err != nil {
			a := answerOf(notes, status.Code(err).String())
			if len(notes) == 0 {
				a.notes = nil
			}
			return a
		}
		if m.GetSyncResponse() {
			return answerOf(notes, "sync")
		}
		notes = append(notes, m.GetUpdate())
	}
}

var (
	hexIDs = regexp.MustCompile(`0x[0-9a-fA-F]+`)
	digits = regexp.MustCompile(`[0-9]+`)
)

func norm(s string) string { return digits.ReplaceAllString(hexIDs.ReplaceAllString(s, "0xH"), "N") }

// answer is what a read got: a status code (or "sync" for a stream that
// synced) and the notifications.
type answer struct {
	code  string
	notes []note
}

// note is one notification: its prefix target and its updates by path.
type note struct {
	target string
	ups    map[string]updShape
}

// updShape is one update: its encoding, the key shapes of its JSON object
// (with the fields of each, merged) or, for an object of strings, its
// fields.
type updShape struct {
	enc    string
	keys   map[string]map[string]bool
	fields map[string]bool
}

func answerOf(ns []*gnmi.Notification, code string) answer {
	a := answer{code: code}
	for _, n := range ns {
		nt := note{target: n.GetPrefix().GetTarget(), ups: map[string]updShape{}}
		for _, u := range n.GetUpdate() {
			var el []string
			for _, e := range u.GetPath().GetElem() {
				el = append(el, e.GetName())
			}
			nt.ups[norm("/"+strings.Join(el, "/"))] = updOf(u.GetVal())
		}
		a.notes = append(a.notes, nt)
	}
	return a
}

func updOf(v *gnmi.TypedValue) updShape {
	raw := v.GetJsonIetfVal()
	if raw == nil {
		return updShape{enc: fmt.Sprintf("%T", v.GetValue())}
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return updShape{enc: "json_ietf, not an object"}
	}
	u := updShape{enc: "json_ietf", keys: map[string]map[string]bool{}, fields: map[string]bool{}}
	for k, e := range obj {
		switch x := e.(type) {
		case string:
			u.fields[norm(k)] = true
		case map[string]any:
			fs := u.keys[norm(k)]
			if fs == nil {
				fs = map[string]bool{}
				u.keys[norm(k)] = fs
			}
			for f, fv := range x {
				if _, ok := fv.(string); !ok {
					f += " (not a string)"
				}
				fs[norm(f)] = true
			}
		default:
			u.fields[norm(k)+" (not a string)"] = true
		}
	}
	return u
}

// unlike says how a (simswitch's) differs from real ("" when alike): see
// TestRealSonicImitationMatchesServer; subsetKeys lets a have fewer kinds
// of key.
func (a answer) unlike(real answer, subsetKeys bool) string {
	if a.code != real.code {
		return "status " + a.code + ", want " + real.code
	}
	if len(a.notes) != len(real.notes) {
		return fmt.Sprintf("%d notifications, want %d", len(a.notes), len(real.notes))
	}
	// Notifications may come in any order: match them by their paths.
	byPaths := func(ns []note) map[string]note {
		m := map[string]note{}
		for _, n := range ns {
			m[n.target+" "+strings.Join(sortedKeys(n.ups), ",")] = n
		}
		return m
	}
	want := byPaths(real.notes)
	for k, n := range byPaths(a.notes) {
		w, ok := want[k]
		if !ok {
			return "a notification with target and paths " + k + " the real server does not send"
		}
		for p, u := range n.ups {
			if why := u.unlike(w.ups[p], subsetKeys); why != "" {
				return p + ": " + why
			}
		}
	}
	return ""
}

func (u updShape) unlike(real updShape, subsetKeys bool) string {
	if u.enc != real.enc {
		return "encoding " + u.enc + ", want " + real.enc
	}
	for f := range u.fields {
		if !real.fields[f] {
			return "field " + f + " the real server does not have"
		}
	}
	for k, fs := range u.keys {
		rfs, ok := real.keys[k]
		if !ok {
			return "key shape " + k + " the real server does not have"
		}
		for f := range fs {
			if !rfs[f] {
				return "field " + f + " under " + k + " the real server does not have"
			}
		}
	}
	if !subsetKeys {
		for k := range real.keys {
			if _, ok := u.keys[k]; !ok {
				return "no key of shape " + k
			}
		}
	}
	return ""
}

func (a answer) String() string {
	var b strings.Builder
	b.WriteString(a.code)
	for _, n := range a.notes {
		fmt.Fprintf(&b, " [%s:", n.target)
		for _, p := range sortedKeys(n.ups) {
			u := n.ups[p]
			fmt.Fprintf(&b, " %s=%s{", p, u.enc)
			for _, k := range sortedKeys(u.keys) {
				fmt.Fprintf(&b, "%s:(%s) ", k, strings.Join(sortedKeys(u.keys[k]), " "))
			}
			b.WriteString(strings.Join(sortedKeys(u.fields), " ") + "}")
		}
		b.WriteString("]")
	}
	return b.String()
}

// The real server stamps each path of a sample when its reader read it,
// not the sample with one time: what the imitation's sonicPathStagger
// imitates (its size is the imitation's; the real one's is Redis' read
// time). Skipped without SONIC_DIR.
func TestRealSonicServerStaggersStamps(t *testing.T) {
	real := sonictest.Start(t, seedWithPeriodicWatermarks(t))
	stamps := sonicSampleStamps(t, real.Addr, 2)
	t.Logf("real sonic-gnmi's stamps of two samples of %v: %v", sonicSamplePaths, stamps)
	for s := 0; s < 2; s++ {
		if stamps[s*2+1] == stamps[s*2] {
			t.Errorf("sample %d: both paths stamped %d: the real server stamps a sample with one time, the imitation must not stagger", s, stamps[s*2])
		}
	}
}
