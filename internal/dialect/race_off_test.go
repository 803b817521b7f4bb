//go:build !race

package dialect

// raceDetector says the tests run with the race detector (go test -race).
const raceDetector = false
