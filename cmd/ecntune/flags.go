package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
)

// Flag values the commands share, parsed with errors that name the flag.

// newLogger builds the logger of --log-format and --log-level.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", format)
}

// parseSince accepts a duration back from now ("10m") or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := units.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (10m, 2h) nor an RFC 3339 time (2026-01-02T15:04:05Z)", s)
	}
	return t, nil
}

// positiveSimTime parses the value val of flag --name as a simulated
// duration above 0.
func positiveSimTime(name, val string) (simenv.Time, error) {
	d, err := units.ParseDuration(val)
	if err != nil {
		return 0, fmt.Errorf("--%s: %v", name, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("--%s: %s must be above 0", name, val)
	}
	return simenv.FromDuration(d), nil
}
