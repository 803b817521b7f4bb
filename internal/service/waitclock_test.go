package service

import (
	"sync"
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

// A wait fires the clock no sooner than d after it began, and no later
// than d/waitSteps after that (plus the timer's lateness on a busy
// machine, given a bound here), wherever it begins between the timer's
// looks. The clocks run side by side, each begun at another point
// between two looks; d is long enough that the bound on lateness still
// tells a step from a second d.
func TestWaitClockFiresWithinAStep(t *testing.T) {
	const d = 2 * time.Second
	const step = d / waitSteps
	const late = 500 * time.Millisecond // the timer's and the scheduler's lateness
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			fired := make(chan time.Time, 1)
			w := newWaitClock(d, func() { fired <- time.Now() })
			defer w.stop()
			time.Sleep(time.Duration(i) * step / 8)
			before := time.Now()
			w.begin()
			after := time.Now()
			at := <-fired
			assert.GreaterOrEqual(t, at.Sub(before), d, "fired before the wait lasted d")
			assert.LessOrEqual(t, at.Sub(after), d+step+late, "fired more than a step after the wait lasted d")
			assert.True(t, w.end())
		})
	}
	wg.Wait()
}

// Waits that each end before d never fire the clock, however many follow
// each other across the timer's looks, and a wait that then lasts d does.
func TestWaitClockManyShortWaits(t *testing.T) {
	const d = 400 * time.Millisecond
	var fires atomic.Int32
	w := newWaitClock(d, func() { fires.Add(1) })
	defer w.stop()
	for end := time.Now().Add(3 * d); time.Now().Before(end); {
		w.begin()
		time.Sleep(d / 40)
		assert.False(t, w.end())
	}
	assert.Zero(t, fires.Load())
	w.begin()
	assert.Eventually(t, func() bool { return fires.Load() == 1 }, 20*d, d/10)
	assert.True(t, w.end())
}
