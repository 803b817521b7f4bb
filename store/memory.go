package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// NewMemory returns a Store that keeps sessions in this process's memory:
// for tests, and for programs that run several engines in one process and
// want them to share sessions. It holds the whole contract (versions,
// atomic commits, expiry) but nothing survives the process. Expired
// sessions are removed when they are next used, and by Commit and Delete
// now and then, so memory does not grow with sessions nobody returns to.
func NewMemory() Store {
	return newMemory(time.Now)
}

// newMemory is NewMemory with the clock expiry is measured on, for tests.
func newMemory(now func() time.Time) *memory {
	return &memory{now: now, sessions: make(map[string]*memSession)}
}

type memory struct {
	now func() time.Time

	mu       sync.Mutex
	closed   bool
	sessions map[string]*memSession
	writes   int // commits and deletes since the last sweep of expired sessions
}

type memSession struct {
	version uint64
	expires time.Time
	header  []byte
	records map[string][]byte
	streams map[string][]byte
}

var errMemoryClosed = errors.New("store: memory store is closed")

// live returns the session when it exists and has not expired, removing
// it when it has. The caller holds m.mu.
func (m *memory) live(session string, now time.Time) *memSession {
	s := m.sessions[session]
	if s != nil && !now.Before(s.expires) {
		delete(m.sessions, session)
		return nil
	}
	return s
}

// sweep removes expired sessions once per len(sessions) writes, so its cost
// is amortized to O(1) per write. The caller holds m.mu.
func (m *memory) sweep(now time.Time) {
	m.writes++
	if m.writes < len(m.sessions) || m.writes < 64 {
		return
	}
	m.writes = 0
	for name, s := range m.sessions {
		if !now.Before(s.expires) {
			delete(m.sessions, name)
		}
	}
}

func (m *memory) Load(ctx context.Context, session string) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: load: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errMemoryClosed
	}
	snap := &Snapshot{Records: map[string][]byte{}, Streams: map[string][]byte{}}
	s := m.live(session, m.now())
	if s == nil {
		return snap, nil
	}
	snap.Version = s.version
	snap.Header = clone(s.header)
	for k, v := range s.records {
		snap.Records[k] = clone(v)
	}
	for k, v := range s.streams {
		snap.Streams[k] = clone(v)
	}
	return snap, nil
}

// LoadWithout is Load, leaving out the bytes of the records whose names
// start with prefix (their lengths are in Sizes).
func (m *memory) LoadWithout(ctx context.Context, session, prefix string) (*Snapshot, error) {
	snap, err := m.Load(ctx, session)
	if err != nil {
		return nil, err
	}
	snap.Sizes = map[string]int{}
	for k, v := range snap.Records {
		if strings.HasPrefix(k, prefix) {
			snap.Sizes[k] = len(v)
			delete(snap.Records, k)
		}
	}
	return snap, nil
}

// LoadRecord returns one record of the session (nil when absent).
func (m *memory) LoadRecord(ctx context.Context, session, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: load record: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errMemoryClosed
	}
	s := m.live(session, m.now())
	if s == nil {
		return nil, nil
	}
	v, ok := s.records[name]
	if !ok {
		return nil, nil
	}
	return append([]byte{}, v...), nil
}

func (m *memory) Version(ctx context.Context, session string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("store: version: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, errMemoryClosed
	}
	if s := m.live(session, m.now()); s != nil {
		return s.version, nil
	}
	return 0, nil
}

func (m *memory) Commit(ctx context.Context, session string, base uint64, c *Change) (uint64, error) {
	if c == nil {
		return 0, fmt.Errorf("%w: commit without a change (nil *Change)", ErrNotApplied)
	}
	if c.TTL <= 0 {
		return 0, fmt.Errorf("%w: commit with TTL %v; it must be positive", ErrNotApplied, c.TTL)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNotApplied, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, fmt.Errorf("%w: %w", ErrNotApplied, errMemoryClosed)
	}
	now := m.now()
	m.sweep(now)
	s := m.live(session, now)
	var cur uint64
	if s != nil {
		cur = s.version
	}
	if cur != base {
		return 0, ErrConflict
	}
	if s == nil {
		s = &memSession{records: map[string][]byte{}, streams: map[string][]byte{}}
		m.sessions[session] = s
	}
	// Nothing below can fail, so the commit is all or nothing.
	if c.Header != nil {
		s.header = clone(c.Header)
	}
	for k, v := range c.Records {
		if v == nil {
			delete(s.records, k)
		} else {
			s.records[k] = clone(v)
		}
	}
	for _, op := range c.Streams {
		switch {
		case op.Delete:
			delete(s.streams, op.Name)
		case op.Append:
			old, ok := s.streams[op.Name]
			if !ok {
				old = []byte{}
			}
			s.streams[op.Name] = append(old, op.Data...)
		default:
			s.streams[op.Name] = clone(op.Data)
		}
	}
	s.version++
	s.expires = now.Add(c.TTL)
	return s.version, nil
}

func (m *memory) Delete(ctx context.Context, session string, base uint64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: delete: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errMemoryClosed
	}
	now := m.now()
	m.sweep(now)
	s := m.live(session, now)
	var cur uint64
	if s != nil {
		cur = s.version
	}
	if cur != base {
		return ErrConflict
	}
	delete(m.sessions, session)
	return nil
}

func (m *memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.sessions = nil
	return nil
}

// clone copies b, keeping nil nil and empty non-nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

var _ PartLoader = (*memory)(nil)
