// Package units is the one definition of the quantities ecntune's files speak in: bytes, bit rates, durations.
// Parse input with ParseBytes, ParseRate and ParseDuration; print with FormatBytes and FormatRate.
//
// Byte sizes: KB, MB and GB are decimal (1000 B), KiB, MiB and GiB binary
// (1024 B); a bare number is bytes. Rates are bits per second ("100Gbps",
// "400G" or "1e11"). Durations need a unit (ns, us or µs, ms, s). Negative
// sizes and durations, non-positive rates, sizes above MaxBytes (1 TB) and
// rates above MaxRateBps (10 Tb/s) are errors that quote the input and the
// bound; simulated durations are held to MaxSimDuration (1 h) by the
// simulator's loaders.
//
// RefRateBps (100 Gb/s) is the link rate at which ECN presets and scenario
// ECN settings are stated; ScaleBytes scales such a byte threshold
// linearly to a port's rate.
package units
