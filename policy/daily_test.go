package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
)

// obsAt is an observation at the given UTC wall time, over 500 µs counters.
func obsAt(t *testing.T, wall string) env.Observation {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, wall)
	if err != nil {
		t.Fatal(err)
	}
	o := validObs(100e9, env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2})
	o.TimeNs, o.Metrics.IntervalNs = ts.UnixNano(), 500_000
	return o
}

// TestDaily: the entry in force is the last whose time of day (UTC) has
// passed, the last one's before the first's, whatever time the policy
// started at: a restarted daily schedule picks up where it was.
func TestDaily(t *testing.T) {
	spec := "daily:08:00=static:nvidia, 20:00:30.5=fixed:100KB/400KB/1%"
	p, err := Lookup(spec)
	if err != nil {
		t.Fatal(err)
	}
	nv, _ := Preset("nvidia")
	late := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.01}
	// a fresh policy each time (an agent restarted at that time) and the
	// one that has run all along agree
	checkDaily(t, spec, p, []dailyCase{
		{"2026-11-27T03:00:00Z", "daily step 2 (from 20:00:30.5 UTC): ", late}, // before 08:00: yesterday's last entry
		{"2026-11-27T07:59:59.999Z", "daily step 2 (from 20:00:30.5 UTC): ", late},
		{"2026-11-27T08:00:00Z", "daily step 1 (from 08:00 UTC): ", nv.Setting(100e9)},
		{"2026-11-27T20:00:30.4Z", "daily step 1 (from 08:00 UTC): ", nv.Setting(100e9)},
		{"2026-11-27T20:00:30.5Z", "daily step 2 (from 20:00:30.5 UTC): ", late},
		{"2026-11-28T09:00:00Z", "daily step 1 (from 08:00 UTC): ", nv.Setting(100e9)},
	})
	// a schedule: by contrast counts from its first decision
	s, _ := Lookup("schedule:static:nvidia,12h=fixed:100KB/400KB/1%")
	if d := s.Decide([]env.Observation{obsAt(t, "2026-11-27T21:00:00Z")})[0]; d.Setting != nv.Setting(100e9) {
		t.Errorf("schedule started at 21:00: %+v, want its first entry", d)
	}
	if ds := p.Decide(nil); len(ds) != 0 {
		t.Errorf("no observations: %v", ds)
	}
	// a time before 1970 (negative Unix ns) is read on the same clock
	neg, _ := Lookup("daily:01:00=static:nvidia,08:00=fixed:100KB/400KB/1%")
	o := obsAt(t, "1970-01-01T00:00:00Z")
	o.TimeNs = -int64(23 * time.Hour) // 1969-12-31T01:00:00Z
	if d := neg.Decide([]env.Observation{o})[0]; d.Setting != nv.Setting(100e9) || !strings.HasPrefix(d.Reason, "daily step 1 (from 01:00 UTC): ") {
		t.Errorf("at 1969-12-31T01:00Z: %+v", d)
	}
	// a model entry decides as the model does
	m, _ := Lookup("daily:00:00=builtin:prefer=1")
	b, _ := Lookup("builtin:prefer=1")
	o = obsAt(t, "2026-11-27T12:00:00Z")
	if got, want := m.Decide([]env.Observation{o})[0], b.Decide([]env.Observation{o})[0]; got.Setting != want.Setting || got.Reason != "daily step 1 (from 00:00 UTC): "+want.Reason {
		t.Errorf("model entry: %+v, want %+v", got, want)
	}
}

func TestDailyErrors(t *testing.T) {
	for spec, msg := range map[string]string{
		"tz=Mars/Olympus,08:00=hpcc":     "daily tz=\"Mars/Olympus\": want an IANA time zone name",
		"tz=Local,08:00=hpcc":            "want an IANA time zone name",
		"tz=,08:00=hpcc":                 "want an IANA time zone name",
		"tz=UTC":                         "no entries after the zone",
		"08:00=hpcc,tz=UTC":              "tz=ZONE comes first, once",
		"":                               "empty daily schedule",
		"08:00":                          "entry 1 \"08:00\": want HH:MM=WHAT",
		"8:00=hpcc":                      "want HH:MM with HH 00-23",
		"24:00=hpcc":                     "want HH:MM with HH 00-23",
		"12:60=hpcc":                     "MM 00-59",
		"12:00:60=hpcc":                  "seconds \"60\": want 00-59",
		"12:00:00.1234567891=hpcc":       "more than nine digits",
		"12:00:00.x=hpcc":                "is not digits",
		"12:00:00:00=hpcc":               "want HH:MM or HH:MM:SS",
		"08:00=hpcc,07:00=nvidia":        "entry 2 \"07:00=nvidia\": 07:00 is not after the previous entry's 08:00",
		"08:00=hpcc,08:00=nvidia":        "is not after",
		"08:00=":                         "nothing to apply",
		"08:00=daily:09:00=hpcc":         "cannot hold",
		"08:00=schedule:hpcc":            "a schedule cannot hold a schedule",
		"08:00=roles:host=hpcc;fabric=x": "cannot hold roles:",
		"08:00=nope":                     "entry 1 (at 08:00) \"nope\": unknown preset \"nope\"",
		"08:00=builtin:prefer=2":         "[-1, 1]",
		"08:00=model:tuned":              "no model registry",
	} {
		if _, err := NewDaily(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("NewDaily(%q) err = %v, want it to contain %q", spec, err, msg)
		}
	}
	for s, want := range map[string]time.Duration{"00:00": 0, "23:59:59.999999999": 24*time.Hour - 1, "12:00:00.5": 12*time.Hour + 500*time.Millisecond, "07:05:09": 7*time.Hour + 5*time.Minute + 9*time.Second} {
		if got, err := ParseTimeOfDay(s); err != nil || got != want {
			t.Errorf("ParseTimeOfDay(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if w := SpecWarnings("daily:08:00=hpcc,20:00=fixed:100B/774KB/1%"); len(w) != 1 || !strings.Contains(w[0], "entry 2 (at 20:00): kmin 100B is below one MTU") {
		t.Errorf("warnings %q", w)
	}
}

// A daily entry that names a registry model is resolved through the
// Resolver, as a schedule's is.
func TestDailyModelFromResolver(t *testing.T) {
	r := tunedResolver()
	p, err := r.Lookup("daily:00:00=hpcc,12:00=model:tuned")
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Decide([]env.Observation{obsAt(t, "2026-11-27T13:00:00Z")})[0]; !strings.HasPrefix(d.Reason, "daily step 2 (from 12:00 UTC): ") || d.Action < 0 {
		t.Errorf("model:tuned in force: %+v", d)
	}
	if _, err := r.Lookup("daily:00:00=hpcc,12:00=model:other"); !errors.Is(err, models.ErrNotFound) {
		t.Errorf("absent model in a daily schedule: %v", err)
	}
}

// A daily schedule in a named zone follows its wall clock, across a
// daylight-saving change too.
func TestDailyZone(t *testing.T) {
	spec := "daily:tz=Europe/Berlin, 02:30=static:nvidia, 20:00=fixed:100KB/400KB/1%"
	nv, _ := Preset("nvidia")
	late := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.01}
	checkDaily(t, spec, nil, []dailyCase{
		{"2026-11-27T01:29:00Z", "daily step 2 (from 20:00 Europe/Berlin): ", late},              // 02:29 CET
		{"2026-11-27T01:30:00Z", "daily step 1 (from 02:30 Europe/Berlin): ", nv.Setting(100e9)}, // 02:30 CET
		{"2026-07-01T00:30:00Z", "daily step 1 (from 02:30 Europe/Berlin): ", nv.Setting(100e9)}, // 02:30 CEST
		{"2026-07-01T18:00:00Z", "daily step 2 (from 20:00 Europe/Berlin): ", late},              // 20:00 CEST
		{"2026-07-01T17:59:59Z", "daily step 1 (from 02:30 Europe/Berlin): ", nv.Setting(100e9)},
		// 2026-03-29: clocks go from 02:00 CET to 03:00 CEST at 01:00 UTC; 02:30
		// never shows, and the entry takes effect when the clock passes it
		{"2026-03-29T00:59:59Z", "daily step 2 (from 20:00 Europe/Berlin): ", late},
		{"2026-03-29T01:00:00Z", "daily step 1 (from 02:30 Europe/Berlin): ", nv.Setting(100e9)},
	})
}

// dailyCase is a wall-clock time, the step whose reason a daily policy's
// decision then starts with, and the setting it applies.
type dailyCase struct {
	wall string
	step string
	want env.Setting
}

// checkDaily asks spec, freshly resolved for each case, and running (when
// not nil: a policy of the same spec that has decided all along) at each
// case's time.
func checkDaily(t *testing.T, spec string, running Policy, cases []dailyCase) {
	t.Helper()
	for _, c := range cases {
		fresh, err := Lookup(spec)
		if err != nil {
			t.Fatal(err)
		}
		o := obsAt(t, c.wall)
		for _, q := range []Policy{running, fresh} {
			if q == nil {
				continue
			}
			if d := q.Decide([]env.Observation{o})[0]; d.Setting != c.want || !strings.HasPrefix(d.Reason, c.step) {
				t.Errorf("at %s: %+v, want %+v from %q", c.wall, d, c.want, c.step)
			}
		}
	}
}
