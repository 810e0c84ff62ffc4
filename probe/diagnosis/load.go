package diagnosis

// Load is the latest load test of a player's line (docs/load-test.md): the
// median round trip its load added in each direction, NaN where that
// direction was not measured. Upload is the player's own sending.
type Load struct {
	Player     string
	UploadMs   float64
	DownloadMs float64
}

// Bufferbloat is a player's `bufferbloat_ms`: what a full line adds per
// direction, NaN (null) for a direction not measured.
type Bufferbloat struct {
	UploadMs   float64
	DownloadMs float64
}

// CauseBufferbloat: a load test found the player's line adds at least
// bufferbloatMs when busy in either direction (grade C or worse).
const CauseBufferbloat = "bufferbloat"
