// Package units is the one definition of the quantities ecntune's files speak in: bytes, bit rates, durations,
// fractions. Parse input with ParseBytes, ParseRate, ParseDuration and ParseFraction; print with FormatBytes and
// FormatRate.
//
// Every size and rate a user writes carries its unit: a bare number other
// than 0 is an error that shows the fix (ns-3's KMIN_MAP is in KB, a YAML
// file could mean bytes: "400" is neither). Byte sizes: KB, MB, GB and TB
// are decimal (1000 B), KiB, MiB, GiB and TiB binary (1024 B), B bytes.
// Rates are bits per second ("100Gbps", "400G" or "1e11bps"). Durations
// need a unit (ns, us or µs, ms, s). A fraction (Pmax) is a bare number
// or a percentage ("0.2" or "20%"). File formats that define their own
// units (ns-3's config, topology and flow files) are read by their own
// parsers, not these. Negative
// sizes and durations, non-positive rates, sizes above MaxBytes (1 TB) and
// rates above MaxRateBps (10 Tb/s) are errors that quote the input and the
// bound; simulated durations are held to MaxSimDuration (1 h) by the
// simulator's loaders.
//
// RefRateBps (100 Gb/s) is the link rate at which ECN presets and scenario
// ECN settings are stated; ScaleBytes scales such a byte threshold
// linearly to a port's rate.
package units
