package store

// The id makers with the randomness a test gives.
var (
	DateIDFrom = dateID
	TimeIDFrom = timeID
)
