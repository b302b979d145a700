package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// weights returns n deterministic pseudo-random bytes.
func weights(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func sample(name string, seed uint64, n int) Model {
	return Model{
		Name:      name,
		Algorithm: "ddqn",
		ObsSpec:   "obs-v1",
		ActSpec:   "act-v1",
		Hyper:     map[string]string{"lr": "0.0005", "gamma": "0.99"},
		Scenarios: []ScenarioRef{{Name: "websearch-50", SHA256: digest([]byte("scenario " + name))}},
		Seed:      int64(seed),
		Workers:   2,
		Eval:      json.RawMessage(`{"fct_p99_us":412.5,"pfc_pauses":0}`),
		Created:   t0.Add(time.Duration(seed) * time.Hour),
		Weights:   weights(seed, n),
	}
}

func openNew(t testing.TB) (*Registry, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "reg.db")
	r, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r, path
}

func mustPut(t testing.TB, r *Registry, m Model) Model {
	t.Helper()
	got, err := r.Put(m)
	if err != nil {
		t.Fatalf("Put %s: %v", m.Name, err)
	}
	return got
}

func wantErr(t *testing.T, err, target error, substr ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", target)
	}
	if !errors.Is(err, target) {
		t.Fatalf("got error %q, want one matching %v", err, target)
	}
	for _, s := range substr {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not mention %q", err, s)
		}
	}
}

func TestPutGetRoundTrip(t *testing.T) {
	r, _ := openNew(t)
	a1 := mustPut(t, r, sample("ddqn-default", 1, 3000))
	a2 := mustPut(t, r, sample("ddqn-default", 2, 5000))
	b1 := mustPut(t, r, sample("ppo-small", 3, 10))
	if a1.ID != 1 || a2.ID != 2 || b1.ID != 3 {
		t.Fatalf("ids %d %d %d, want 1 2 3", a1.ID, a2.ID, b1.ID)
	}
	if a1.Version != 1 || a2.Version != 2 || b1.Version != 1 {
		t.Fatalf("versions %d %d %d, want 1 2 1", a1.Version, a2.Version, b1.Version)
	}
	if a2.Ref() != "ddqn-default@2" || a2.Status != StatusCandidate || a2.WeightsSize != 5000 {
		t.Fatalf("stored %s status %s size %d", a2.Ref(), a2.Status, a2.WeightsSize)
	}
	if a2.WeightsSHA256 != digest(weights(2, 5000)) {
		t.Fatalf("sha256 %s not the weights' digest", a2.WeightsSHA256)
	}
	got, err := r.Get("ddqn-default", 2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Weights, weights(2, 5000)) {
		t.Fatal("weights differ after the round trip")
	}
	want := a2
	want.Weights, got.Weights = nil, nil
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if !bytes.Equal(wj, gj) {
		t.Fatalf("metadata differs:\n got %s\nwant %s", gj, wj)
	}
	if !got.Created.Equal(t0.Add(2*time.Hour)) || got.Hyper["gamma"] != "0.99" || got.Seed != 2 || got.Workers != 2 {
		t.Fatalf("fields lost: %+v", got)
	}

	// Explicit versions: the next automatic one follows the highest.
	m := sample("ddqn-default", 4, 10)
	m.Version = 7
	if got := mustPut(t, r, m); got.Version != 7 || got.ID != 4 {
		t.Fatalf("explicit version: got %s id %d", got.Ref(), got.ID)
	}
	if got := mustPut(t, r, sample("ddqn-default", 5, 10)); got.Version != 8 {
		t.Fatalf("after @7 the next version is %d, want 8", got.Version)
	}
	m.Version = 2
	_, err = r.Put(m)
	wantErr(t, err, ErrExists, "ddqn-default@2")

	// Closing releases everything; reopening read-only sees it all.
	path := r.Path()
	r.Close()
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	all, err := ro.List("")
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, m := range all {
		refs = append(refs, m.Ref())
		if m.Weights != nil {
			t.Fatalf("List returned weights for %s", m.Ref())
		}
	}
	if got := strings.Join(refs, " "); got != "ddqn-default@1 ddqn-default@2 ddqn-default@7 ddqn-default@8 ppo-small@1" {
		t.Fatalf("List order: %s", got)
	}
	_, err = ro.Put(sample("x", 1, 1))
	wantErr(t, err, ErrReadOnly, path)
	_, err = r.Get("ddqn-default", 1)
	wantErr(t, err, ErrClosed)
}

func TestPutRejectsBadFields(t *testing.T) {
	r, _ := openNew(t)
	cases := []struct {
		field string
		edit  func(*Model)
	}{
		{"name", func(m *Model) { m.Name = "9lives" }},
		{"name", func(m *Model) { m.Name = "has space" }},
		{"name", func(m *Model) { m.Name = strings.Repeat("a", 65) }},
		{"version", func(m *Model) { m.Version = -1 }},
		{"algorithm", func(m *Model) { m.Algorithm = " " }},
		{"obs_spec", func(m *Model) { m.ObsSpec = "" }},
		{"act_spec", func(m *Model) { m.ActSpec = "a\nb" }},
		{"scenarios[0].sha256", func(m *Model) { m.Scenarios[0].SHA256 = "abc" }},
		{"scenarios[0].name", func(m *Model) { m.Scenarios[0].Name = "" }},
		{"workers", func(m *Model) { m.Workers = -2 }},
		{"eval", func(m *Model) { m.Eval = json.RawMessage(`[1,2]`) }},
		{"eval", func(m *Model) { m.Eval = json.RawMessage(`{"a":`) }},
		{"created", func(m *Model) { m.Created = time.Time{} }},
		{"parent", func(m *Model) { m.Parent = "ddqn" }},
		{"weights", func(m *Model) { m.Weights = nil }},
		{"weights_sha256", func(m *Model) { m.WeightsSHA256 = digest([]byte("other")) }},
		{"status", func(m *Model) { m.Status = StatusPromoted }},
	}
	for _, c := range cases {
		m := sample("good", 1, 16)
		c.edit(&m)
		_, err := r.Put(m)
		want := c.field
		if c.field == "weights" {
			want = "no weights"
		}
		if c.field == "name" {
			want = "model name"
		}
		if c.field == "status" {
			want = "use Promote"
		}
		wantErr(t, err, ErrInvalid, want)
	}
	m := sample("good", 1, 16)
	m.Parent = "ddqn-default@3"
	if got := mustPut(t, r, m); got.Parent != "ddqn-default@3" || got.ID != 1 {
		t.Fatalf("parent %q id %d: rejected puts must not consume ids", got.Parent, got.ID)
	}
}

func TestResolve(t *testing.T) {
	r, _ := openNew(t)
	for i := uint64(1); i <= 3; i++ {
		mustPut(t, r, sample("ddqn", i, 64))
	}
	mustPut(t, r, sample("ppo", 9, 64)) // id 4
	check := func(ref string, wantRef string) {
		t.Helper()
		m, err := r.Resolve(ref)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", ref, err)
		}
		if m.Ref() != wantRef || len(m.Weights) != 64 {
			t.Fatalf("Resolve(%q) = %s with %d bytes, want %s", ref, m.Ref(), len(m.Weights), wantRef)
		}
	}
	check("ddqn", "ddqn@3") // nothing promoted: latest
	check("ddqn@latest", "ddqn@3")
	check("ddqn@2", "ddqn@2")
	check("4", "ppo@1")
	check("#2", "ddqn@2")
	_, err := r.Resolve("ddqn@promoted")
	wantErr(t, err, ErrNotFound, "no promoted version")
	if _, err := r.Promote("ddqn@1", t0); err != nil {
		t.Fatal(err)
	}
	check("ddqn", "ddqn@1") // promoted wins over latest
	check("ddqn@promoted", "ddqn@1")
	check("ddqn@latest", "ddqn@3")

	_, err = r.Resolve("ddqn@9")
	wantErr(t, err, ErrNotFound, "no version 9", "ddqn")
	_, err = r.Resolve("nosuch")
	wantErr(t, err, ErrNotFound, "no model named nosuch")
	_, err = r.Resolve("99")
	wantErr(t, err, ErrNotFound, "id 99")
	for _, bad := range []string{"", "ddqn@0", "ddqn@x", "ddqn@-1", "ddqn@+2", "1x", "@3", "#", "0"} {
		_, err := r.Resolve(bad)
		wantErr(t, err, ErrInvalid, "reference")
	}
	if _, err := r.List("nosuch"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("List of unknown name: %v", err)
	}
	ms, err := r.List("ddqn")
	if err != nil || len(ms) != 3 || ms[0].Status != StatusPromoted || ms[2].Status != StatusCandidate {
		t.Fatalf("List(ddqn) = %d models, err %v", len(ms), err)
	}
}

func statuses(t *testing.T, r *Registry, name string) string {
	t.Helper()
	ms, err := r.List(name)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, m := range ms {
		s = append(s, string(m.Status[0]))
	}
	return strings.Join(s, "")
}

func TestPromoteRollback(t *testing.T) {
	r, _ := openNew(t)
	for i := uint64(1); i <= 4; i++ {
		mustPut(t, r, sample("m", i, 32))
	}
	_, err := r.Rollback("m", t0)
	wantErr(t, err, ErrNotFound, "no earlier promoted version")
	for i, ref := range []string{"m@1", "m@2", "m@3"} {
		m, err := r.Promote(ref, t0.Add(time.Duration(i)*time.Minute))
		if err != nil || m.Status != StatusPromoted {
			t.Fatalf("Promote %s: %v", ref, err)
		}
	}
	if got := statuses(t, r, "m"); got != "rrpc" {
		t.Fatalf("statuses after three promotions %s, want rrpc", got)
	}
	_, err = r.Promote("m@3", t0)
	wantErr(t, err, ErrInvalid, "already the promoted")

	m, err := r.Rollback("m", t0.Add(time.Hour))
	if err != nil || m.Version != 2 || m.Status != StatusPromoted {
		t.Fatalf("Rollback = %s %s, %v; want m@2 promoted", m.Ref(), m.Status, err)
	}
	if got := statuses(t, r, "m"); got != "rprc" {
		t.Fatalf("statuses after rollback %s, want rprc", got)
	}
	if m, err = r.Rollback("m", t0.Add(2*time.Hour)); err != nil || m.Version != 1 {
		t.Fatalf("second Rollback = %s, %v; want m@1", m.Ref(), err)
	}
	_, err = r.Rollback("m", t0)
	wantErr(t, err, ErrNotFound, "no earlier promoted version")
	if p, _ := r.Resolve("m@promoted"); p.Version != 1 {
		t.Fatalf("promoted is %s after a failed rollback", p.Ref())
	}

	h, err := r.History("m")
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		act     string
		v, prev int
		min     int
	}
	want := []ev{{"promote", 1, 0, 0}, {"promote", 2, 1, 1}, {"promote", 3, 2, 2}, {"rollback", 2, 3, 60}, {"rollback", 1, 2, 120}}
	if len(h) != len(want) {
		t.Fatalf("history has %d events, want %d: %+v", len(h), len(want), h)
	}
	for i, w := range want {
		e := h[i]
		if e.Seq != i+1 || e.Action != w.act || e.Version != w.v || e.Previous != w.prev || !e.At.Equal(t0.Add(time.Duration(w.min)*time.Minute)) {
			t.Fatalf("event %d = %+v, want %+v", i, e, w)
		}
	}
}

func TestDelete(t *testing.T) {
	r, _ := openNew(t)
	for i := uint64(1); i <= 3; i++ {
		mustPut(t, r, sample("m", i, 32))
	}
	if _, err := r.Promote("m@1", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Promote("m@2", t0); err != nil {
		t.Fatal(err)
	}
	d, err := r.Delete("m@3", false)
	if err != nil || d.Version != 3 {
		t.Fatalf("Delete m@3: %s %v", d.Ref(), err)
	}
	if got := mustPut(t, r, sample("m", 4, 8)); got.Version != 4 || got.ID != 4 {
		t.Fatalf("after deleting @3 the next put is %s id %d, want m@4 id 4", got.Ref(), got.ID)
	}
	_, err = r.Delete("m", false) // "m" resolves to the promoted m@2
	wantErr(t, err, ErrPromoted, "m@2")
	if _, err := r.Delete("m@2", true); err != nil {
		t.Fatal(err)
	}
	_, err = r.Resolve("m@promoted")
	wantErr(t, err, ErrNotFound)
	if m, err := r.Resolve("m"); err != nil || m.Version != 4 {
		t.Fatalf("with nothing promoted %q resolves to %s, %v", "m", m.Ref(), err)
	}
	// Rollback after the promoted version was deleted brings back m@1.
	if m, err := r.Rollback("m", t0); err != nil || m.Version != 1 {
		t.Fatalf("Rollback after forced delete = %s, %v", m.Ref(), err)
	}
	if got := statuses(t, r, "m"); got != "pc" {
		t.Fatalf("statuses %s, want pc", got)
	}
	_, err = r.Get("m", 2)
	wantErr(t, err, ErrNotFound, "no version 2")
	_, err = r.Delete("m@9", false)
	wantErr(t, err, ErrNotFound)
}

func TestCheckSpec(t *testing.T) {
	m := sample("ddqn-default", 1, 1)
	m.Version = 3
	if err := CheckSpec(m, "obs-v1", "act-v1"); err != nil {
		t.Fatalf("matching spec: %v", err)
	}
	err := CheckSpec(m, "obs-v2", "act-v1")
	wantErr(t, err, ErrSpecMismatch)
	want := "model ddqn-default@3 was trained with observation spec obs-v1, this ecntune speaks obs-v2: retrain or use a matching release"
	if err.Error() != want {
		t.Fatalf("message:\n got %s\nwant %s", err, want)
	}
	err = CheckSpec(m, "obs-v2", "act-v9")
	var se *SpecError
	if !errors.As(err, &se) || !se.ObsMismatch || !se.ActMismatch || se.RunningAct != "act-v9" {
		t.Fatalf("both mismatched: %#v", err)
	}
	if !strings.Contains(err.Error(), "action spec act-v1, this ecntune speaks act-v9") {
		t.Fatalf("message %q", err)
	}
}

func TestCheckpoints(t *testing.T) {
	r, path := openNew(t)
	_, err := r.LoadCheckpoint("run-1")
	wantErr(t, err, ErrNotFound, "run-1")
	if err := r.SaveCheckpoint("run-1", 100, []byte("state at 100")); err != nil {
		t.Fatal(err)
	}
	if err := r.SaveCheckpoint("run-2", 5, weights(5, 40000)); err != nil {
		t.Fatal(err)
	}
	if err := r.SaveCheckpoint("run-1", 250, []byte("state at 250, longer")); err != nil {
		t.Fatal(err)
	}
	cp, err := r.LoadCheckpoint("run-1")
	if err != nil || cp.Step != 250 || string(cp.State) != "state at 250, longer" {
		t.Fatalf("LoadCheckpoint = %d %q, %v", cp.Step, cp.State, err)
	}
	wantErr(t, r.SaveCheckpoint("run 1", 1, nil), ErrInvalid, "run name")
	wantErr(t, r.SaveCheckpoint("run-1", -1, nil), ErrInvalid, "step -1")
	// A failed save keeps the old checkpoint.
	if cp, _ := r.LoadCheckpoint("run-1"); cp.Step != 250 {
		t.Fatalf("step %d after rejected saves", cp.Step)
	}
	// Damage the stored state: the load notices.
	r.Close()
	flipAll(t, path, weights(5, 40000)[1000:1032])
	r2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	_, err = r2.LoadCheckpoint("run-2")
	wantErr(t, err, ErrCorrupt, "run-2", "sha256")
	// The listing still shows the damaged one (so it can be deleted).
	list, err := r2.Checkpoints()
	if err != nil || len(list) != 2 {
		t.Fatalf("Checkpoints = %+v, %v", list, err)
	}
	if l := list[0]; l.Run != "run-1" || l.Step != 250 || l.Size != 20 || l.Damaged || l.State != nil {
		t.Fatalf("run-1 listed as %+v", l)
	}
	if l := list[1]; l.Run != "run-2" || !l.Damaged || l.Size != 40000 {
		t.Fatalf("damaged run-2 listed as %+v", l)
	}
	if err := r2.DeleteCheckpoint("run-2"); err != nil {
		t.Fatal(err)
	}
	_, err = r2.LoadCheckpoint("run-2")
	wantErr(t, err, ErrNotFound)
	if cp, err := r2.LoadCheckpoint("run-1"); err != nil || cp.Step != 250 {
		t.Fatalf("run-1 after reopen: %d %v", cp.Step, err)
	}
}

func TestSwapCheckpoint(t *testing.T) {
	r, _ := openNew(t)
	a, b := []byte("state a"), []byte("state b")
	sumA, sumB := sha256.Sum256(a), sha256.Sum256(b)
	// Expecting none: the first save goes ahead, a second one with the
	// same expectation (another process starting the same run) does not.
	if err := r.SwapCheckpoint("run", nil, 10, a); err != nil {
		t.Fatal(err)
	}
	wantErr(t, r.SwapCheckpoint("run", nil, 10, b), ErrConflict, "run", "step 10", "another process")
	// The owner moves on from what it wrote.
	if err := r.SwapCheckpoint("run", &sumA, 20, b); err != nil {
		t.Fatal(err)
	}
	// A stale owner (still holding a's sum) is stopped and changes nothing.
	wantErr(t, r.SwapCheckpoint("run", &sumA, 30, a), ErrConflict, "step 20")
	wantErr(t, r.SwapCheckpoint("run", &sumA, 0, nil), ErrConflict)
	if cp, err := r.LoadCheckpoint("run"); err != nil || cp.Step != 20 || string(cp.State) != "state b" {
		t.Fatalf("after refused swaps: %d %q %v", cp.Step, cp.State, err)
	}
	// Delete by the owner, then a swap that expects it gets ErrConflict.
	if err := r.SwapCheckpoint("run", &sumB, 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.LoadCheckpoint("run"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	wantErr(t, r.SwapCheckpoint("run", &sumB, 40, a), ErrConflict, "removed")
	wantErr(t, r.SwapCheckpoint("bad name", nil, 1, a), ErrInvalid)
	wantErr(t, r.SwapCheckpoint("bad name", nil, 0, nil), ErrInvalid)
}

func TestVetPromotion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reg.db")
	old := errors.New("old spec")
	vetting := Options{NoSync: true, Vet: func(m Model) error {
		if m.ObsSpec != "obs-v2" {
			return old
		}
		return nil
	}}
	r, err := Open(path, vetting)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mustPut(t, r, sample("m", 1, 100)) // obs-v1
	v2 := sample("m", 2, 100)
	v2.ObsSpec = "obs-v2"
	mustPut(t, r, v2)
	_, err = r.Promote("m@1", t0)
	wantErr(t, err, old, "promote m@1")
	if got := statuses(t, r, "m"); got != "cc" {
		t.Fatalf("statuses after a vetoed promote %s, want cc", got)
	}
	if _, err := r.Promote("m@2", t0); err != nil {
		t.Fatal(err)
	}
	// m@1 reaches the promotion record through an unvetted handle; a
	// rollback to it through the vetting one is stopped, nothing changed.
	r.Close()
	plain, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"m@1", "m@2"} {
		if _, err := plain.Promote(ref, t0); err != nil {
			t.Fatal(err)
		}
	}
	plain.Close()
	r, err = Open(path, vetting)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Rollback("m", t0)
	wantErr(t, err, old, "roll back m to m@1")
	if got := statuses(t, r, "m"); got != "rp" {
		t.Fatalf("statuses after a vetoed rollback %s, want rp", got)
	}
	if h, _ := r.History("m"); len(h) != 3 {
		t.Fatalf("history has %d events after a vetoed rollback, want 3", len(h))
	}
}

func TestConcurrentUse(t *testing.T) {
	r, _ := openNew(t)
	const workers, each = 4, 10
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			name := "w" + string(rune('a'+w))
			for i := range each {
				m, err := r.Put(sample(name, uint64(w*100+i), 256))
				if err == nil {
					_, err = r.Resolve(m.Ref())
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	all, err := r.List("")
	if err != nil || len(all) != workers*each {
		t.Fatalf("%d models, %v", len(all), err)
	}
	seen := map[uint64]bool{}
	for _, m := range all {
		if seen[m.ID] || m.ID < 1 || m.ID > workers*each {
			t.Fatalf("id %d repeated or out of range", m.ID)
		}
		seen[m.ID] = true
	}
	if all[each-1].Ref() != "wa@10" || all[each].Ref() != "wb@1" {
		t.Fatalf("order: %s %s", all[each-1].Ref(), all[each].Ref())
	}
}

// Deleting a version out of the promotion record does not leave a version
// next to itself: promoted 1, 2, 1, then 2 deleted, a rollback "rolled
// back" to the version already promoted.
func TestRollbackAfterDeleteSkipsTheVersionPromoted(t *testing.T) {
	r, _ := openNew(t)
	for i := uint64(1); i <= 2; i++ {
		mustPut(t, r, sample("a", i, 32))
	}
	for i, ref := range []string{"a@1", "a@2", "a@1"} {
		if _, err := r.Promote(ref, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatalf("Promote %s: %v", ref, err)
		}
	}
	if _, err := r.Delete("a@2", false); err != nil {
		t.Fatal(err)
	}
	_, err := r.Rollback("a", t0.Add(time.Hour))
	wantErr(t, err, ErrNotFound, "no earlier promoted version")
}
