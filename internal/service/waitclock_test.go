package service

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A wait that lasts d fires the clock, and its end says so; one that ends
// sooner does not, and its end says it did not.
func TestWaitClockEndSaysFired(t *testing.T) {
	const d = 100 * time.Millisecond
	var fires atomic.Int32
	w := newWaitClock(d, func() { fires.Add(1) })
	defer w.stop()
	for range 5 {
		w.begin()
		time.Sleep(d / 10)
		assert.False(t, w.end(), "a wait of d/10 fired the clock")
	}
	assert.Zero(t, fires.Load())
	w.begin()
	assert.Eventually(t, func() bool { return fires.Load() == 1 }, 20*d, d/10)
	assert.True(t, w.end(), "the wait that fired the clock")
	w.begin()
	time.Sleep(3 * d)
	assert.False(t, w.end(), "the clock fires once")
	assert.Equal(t, int32(1), fires.Load())
}

// A wait that ends as it reaches d either fires the clock or says at its
// end that it did not, never both or neither.
func TestWaitClockFiresOrEnds(t *testing.T) {
	for range 20 {
		const d = 2 * time.Millisecond
		var fires atomic.Int32
		w := newWaitClock(d, func() { fires.Add(1) })
		said := 0
		for i := 0; i < 2000 && said == 0; i++ {
			w.begin()
			time.Sleep(time.Duration(i%5) * d / 2)
			if w.end() {
				said++
			}
		}
		w.stop()
		time.Sleep(5 * d) // a fire that began before stop
		assert.Equal(t, int32(said), fires.Load(), "fired %d times, and end said so %d times", fires.Load(), said)
	}
}
