// Package redisstore is a store.Store on Redis (7.0 or later), so that
// several acpnormd replicas share their sessions and a session outlives the
// replica that served it. It uses github.com/redis/go-redis/v9.
//
//	s, err := redisstore.Open("redis://127.0.0.1:6379/0")
//
// # Deployments
//
// The URL says which kind of deployment it names, in go-redis's own forms:
//
//   - one server: redis://[user:password@]host:port/db (go-redis ParseURL);
//   - Sentinel: redis://[user:password@]sentinel:port/db?master_name=NAME&addr=sentinel2:port&...
//     (ParseFailoverURL): the host and every addr are Sentinels, the user
//     and password in the URL are the Sentinels' own, and the master's are
//     the username and password parameters. The client asks the Sentinels
//     for the master and follows a failover by itself;
//   - Cluster: redis://[user:password@]seed:port?addr=seed2:port&...
//     (ParseClusterURL): any URL with an addr parameter and no master_name.
//     A cluster known by one seed names that seed twice,
//     redis://seed:port?addr=seed:port (a URL without addr is one server).
//     A cluster has database 0 only.
//
// rediss:// is TLS in each. Options that would send commands to replicas
// (read_only, replica_only, route_by_latency, route_randomly) are refused:
// the store reads what it has just written.
//
// # Waiting for replicas
//
// Redis replicates asynchronously: a master that dies just after a commit
// can take it along, and the replica promoted in its place never had it.
// WithWaitReplicas(n, timeout) makes Commit send WAIT n timeout right
// after the commit script, in the same pipeline and so on the same
// connection (WAIT counts the replicas that hold that connection's
// writes), and return ErrNotReplicated when fewer than n replicas
// acknowledged in time. Such a commit is applied on the master, but not
// acknowledged: it survives unless the master is lost before a replica
// copies it, and the caller cannot tell which (sent again, it may find
// itself applied). So that this happens as seldom as it can, the commit
// script first counts the master's replicas that are online and
// acknowledged its stream within the last 10 s, or the timeout when
// longer (INFO replication's lag), and applies nothing when they are
// fewer than n: Commit then returns ErrTooFewReplicas, and the commit may
// simply be sent again. Confirm waits in the same way, after the fact,
// for the replicas to hold every commit of a session: a commit sent
// again and found applied (its token among the session's last) returns
// with the WAIT of its second sending, but a caller that finds a commit
// applied by reading the session answers from it only once Confirm
// returns. A master whose replicas are gone (a network
// split, a replica restarting, a master just promoted whose replicas have
// not attached yet) refuses before it applies; only a replica that stops
// acknowledging within that window leaves a commit applied but
// unacknowledged. On Cluster the pipeline goes to the master of the
// session's slot (ClusterClient.MasterForKey), following a moved slot a
// few times.
//
// WAIT n counts any n replicas, so an acknowledged commit survives a
// master that dies (Sentinel promotes the replica with the most data)
// but not always a planned Sentinel failover (SENTINEL FAILOVER) when n
// is below the number of replicas: the old master, still a master after
// one replica was promoted, takes commits that its other replicas
// acknowledge and then drop when they resync from the new master.
// Waiting for every replica keeps them (the old master then refuses,
// ErrTooFewReplicas, until the client reaches the new one). CLUSTER
// FAILOVER pauses the master until its replica has caught up, and loses
// none.
//
// # Layout
//
// One session is a handful of keys that share one hash tag, so that they
// live in one slot and a script may touch them all, also on Redis Cluster
// (the scripts name the hash and the name set as keys, and build the
// streams' keys, in the same slot, from them):
//
//	<prefix>{<id>}              hash: v = version, h = header, r:<name> = records,
//	                            c = the last 8 commits (token, version),
//	                            g = the generation, x = the streams' expiry
//	<prefix>{<id>}:k            set: the names of the session's streams, and
//	                            "", so that it is there with the hash (a stream
//	                            "" exists while the hash has e = 1)
//	<prefix>{<id>}:s:<g>:<name> string: the text stream <name>
//
// <id> is the session id in unpadded URL-safe base64 (or "=" for the empty
// id), so that no session id, whatever its bytes (braces, colons, NUL),
// can end the hash tag early or reach another session's keys. The session
// id is the engine's key of the session, which holds its namespace (the
// acpnormd identity; see normalize.Normalizer.Namespace), so the
// namespace is inside the hash tag too. The prefix
// is "acpnorm:" unless WithPrefix or the URL's prefix parameter says
// otherwise.
//
// A stream is a plain string: an Append op is one APPEND of the new bytes,
// so growing output costs what was added, not the whole text.
//
// Load reads a whole session in one script. LoadWithout (store.PartLoader)
// is the same script but for the records whose names start with a prefix,
// of which only the lengths are sent, and LoadRecord reads one record
// with one HGET: the engine loads a session without the answers it keeps
// for frames sent again, and reads one when its frame is sent again.
//
// # Resharding
//
// While a session's slot moves from one Cluster master to another
// (CLUSTER SETSLOT ... IMPORTING and MIGRATING, MIGRATE of its keys, then
// SETSLOT ... NODE), its keys can be split between the two for a while.
// The name set always has a member, the empty name (from the session's
// first commit by a build that adds it), so that it exists whenever the
// session does: while the slot migrates, Redis answers
// TRYAGAIN to a script whose declared keys are not all on the node, also
// when one of them does not exist at all. A stream may still be named
// "": it exists while the hash has the field e.
// No script reads or writes a split session: each first checks that
// every key it is about to touch is on its node (hereSource), and
// otherwise answers TRYAGAIN having written nothing. A commit answered
// TRYAGAIN is sent again a few times, a little later, then the error is
// returned. Until the
// session's keys have moved, its commits run on the old master; then
// that master answers ASK, which go-redis follows to the new one. A
// commit that starts a new stream is TRYAGAIN on the old master as long
// as the slot is migrating (Redis makes a migrating slot's new keys on
// the new master only). A commit that waits for replicas (its pipeline
// goes to one node) follows the ASK itself. A session that does not
// exist yet is refused (TRYAGAIN) for the whole move: neither master
// holds its declared keys. None of these scripts applies anything before
// it refuses; a commit may have been sent again after a first sending
// whose answer was lost, so such an error wraps store.ErrNotApplied only
// when no sending may have run (see Commits that fail), and the caller
// loads the session before it sends the commit again. A stream
// named "" that a build before this scheme wrote (no field e) is not
// listed: the engine never names a stream so.
//
// # Concurrency: optimistic version check
//
// Commit is one Lua script (sent once, then run by its SHA1; loaded again
// by itself after a SCRIPT FLUSH or a restart): it compares the session's
// version with the commit's base, applies the whole change, gives the
// session a new version and sets the expiry of every key of the session,
// or does nothing and reports a conflict. A new version is above the old
// one and above Redis's clock in milliseconds times 1024, plus a jump
// drawn from the commit's token: when Redis loses commits (a replica
// promoted while behind its master, a restart without persistence), the
// commits that follow do not make the lost versions again, so a replica
// that cached the session at one of them finds it changed (Version,
// Commit) instead of taking the other history for its own. Only a clock
// set back past the lost commits, on the Redis that serves the session,
// could give a lost number again. Redis runs a script alone, so a commit is atomic
// and two replicas can never both win one version.
//
// We chose this compare-and-set over per-session leases with fencing
// tokens. A lease has to be renewed and expires: a replica that stalls (a
// GC pause, a paused VM, a network partition) past its lease must notice
// before it writes, and every write must still carry a fencing token that
// Redis checks, which is this version check again, plus the lease traffic.
// With the version check alone there is nothing to renew or expire, a
// failover needs no waiting for a lease to run out, and a conflict (two
// replicas writing one session at once, which routing makes rare) costs
// the loser one Load and a re-apply. In the common case, one replica
// owning a session, a frame costs one round trip.
//
// Each commit also carries a unique token, and the session keeps the
// tokens and versions of its last 8 commits. When the connection breaks
// or times out after Redis applied a commit but before its reply
// arrived, the store sends the command again; the script then finds the
// token at the version the commit made and reports that version (even
// when other commits followed in between) rather than a conflict, so the
// caller neither applies its change twice nor thinks it lost.
//
// # Commits that fail
//
// An error other than store.ErrConflict leaves it unknown whether the
// commit applied, unless it wraps store.ErrNotApplied. A commit whose
// answer never came (a timeout, a broken connection, an ended context)
// may have been applied, or be applied later still: a server that was
// only stopped or slow runs the commit it had read once it goes on. The
// store says a commit was not applied only when it knows that: it was
// refused before it was sent (no change, a TTL that is not positive, an
// ended context, no connection to be had), no connection could be made
// (a dial that failed sent nothing; so did a new connection whose set-up,
// HELLO and the rest, failed or timed out, as go-redis writes a command
// only once its connection is set up), or Redis answered with an error it
// gives before a script runs, or at the script's first write (see
// refused: a Protocol error, which a connection that has not
// authenticated gets for a command as long as a commit; NOSCRIPT,
// LOADING, BUSY, NOAUTH, MASTERDOWN, MOVED, ASK, TRYAGAIN, CROSSSLOT,
// CLUSTERDOWN, OOM, READONLY, MISCONF, NOREPLICAS);
// the commit script checks everything (version, replicas, keys) before
// its first write. Any other error reply (WRONGTYPE, a Lua error) may
// come after writes, which Redis does not undo. go-redis would send a
// command again after a timeout and return only the last error (a dial
// refused, READONLY), which says nothing of the sending that timed out:
// the commit script is sent as a command go-redis sends at most once,
// and the store sends it again itself, as go-redis would (its
// max_retries, a Cluster's max_redirects, and backoff), so that it knows
// whether any sending may have run. ErrTooFewReplicas, too, wraps
// store.ErrNotApplied only when no earlier sending may have run.
//
// # Expiry
//
// Every commit sets the expiry of the session's hash and name set to the
// change's TTL (PEXPIRE), so a session nobody writes to is gone, by
// Redis's own expiry, exactly one TTL after its last commit. Pushing every
// stream's expiry out on every commit would cost a command per stream per
// frame (8 times a plain commit's time with 300 streams), so streams
// expire at a time x kept between one and two TTLs ahead: a commit writes
// x on the streams it touches, and on all of them only when x has come
// closer than one TTL, at most once per TTL. A stream is read only through
// its session's hash, so it is unreachable once the hash has expired, and
// gone at most one TTL later; a session created again under the same id
// starts a new generation g (the streams' keys include it), so leftovers
// of the old one can never be read or appended to. Every key the store
// writes has an expiry. So Redis must run with maxmemory-policy
// noeviction: the volatile-* policies evict keys with an expiry, and
// would evict parts of live sessions as allkeys-* do (MaxmemoryPolicies
// reads the policy). A full Redis with noeviction refuses the commit,
// whose first write is one Redis refuses when full.
//
// Load and Delete are scripts too: one round trip each. Version is one
// HGET of the session's version.
//
// # Readiness
//
// Check (store.Checker) says whether a commit would be taken now, not
// only whether Redis answers (Ping): a full Redis (maxmemory with
// noeviction) or a master with fewer replicas online than
// WithWaitReplicas asks for answers PING but refuses every commit. It
// runs a script that counts the replicas as the commit script does and
// writes <prefix>readiness (on a Cluster <prefix>readiness:{<tag>}, one
// per master, the tag chosen to fall in one of its slots), expiring in
// 10 s. On a Cluster it asks only the masters that serve slots, so a
// node down that serves none (a replica, a master whose replica took its
// slots) leaves it passing, and fails with a ClusterError naming each
// master that would refuse a commit, with its slots, and the slots no
// master serves.
package redisstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/acpnorm/acpnorm/store"
)

// DefaultPrefix starts every key the store writes, unless WithPrefix or
// the URL's prefix parameter sets another.
const DefaultPrefix = "acpnorm:"

// Store is a store.Store on a Redis server, a Sentinel-watched master or
// a Redis Cluster. Its methods are safe for concurrent use.
type Store struct {
	c       redis.UniversalClient
	cluster *redis.ClusterClient // c, when it is a cluster's
	prefix  string
	where   string // the URL without its passwords, for errors

	wait        int           // replicas a commit waits for (WithWaitReplicas)
	waitTimeout time.Duration // how long it waits

	// How often a script that writes is sent again, and the backoff
	// (the client's own; see send).
	resends                int
	minBackoff, maxBackoff time.Duration

	tokenBase uint64        // random, per Store
	tokenSeq  atomic.Uint64 // makes each commit's token unique in this Store

	// On a cluster: the options go-redis gave a node's client, to reach
	// the node an ASK names (see runAndWait), and those nodes' clients.
	nodeOptions atomic.Pointer[redis.Options]
	askMu       sync.Mutex
	asked       map[string]*redis.Client
	closed      bool // under askMu: Close ran, no client is made
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.Confirmer  = (*Store)(nil)
	_ store.Pinger     = (*Store)(nil)
	_ store.PartLoader = (*Store)(nil)
	_ store.Checker    = (*Store)(nil)
)

// ErrNotReplicated is the error (wrapped) of a commit that the master
// applied but fewer replicas than WithWaitReplicas asks for acknowledged
// within its timeout. The commit is not acknowledged: a failover may still
// lose it, or keep it.
// It wraps store.ErrUnacknowledged.
var ErrNotReplicated = fmt.Errorf("%w: too few replicas hold it (WAIT)", store.ErrUnacknowledged)

// maxReplicaLag is how long ago a replica may have last acknowledged the
// master's stream and still count for WithWaitReplicas (or the wait's
// timeout, when longer): Redis's own default for min-replicas-max-lag. A
// replica acknowledges every second; one that is cut off is not listed
// at all.
const maxReplicaLag = 10 * time.Second

// ErrTooFewReplicas is the error of a commit, with WithWaitReplicas, that
// the master refused before applying it: fewer replicas than asked for
// were online and acknowledging (see Waiting for replicas). That sending
// wrote nothing; the error wraps store.ErrNotApplied too unless an
// earlier sending of the commit got no answer (see Commits that fail).
var ErrTooFewReplicas = errors.New("too few replicas online to wait for (nothing applied)")

// An Option changes how Open sets up the store.
type Option func(*config)

type config struct {
	prefix      string
	pingTimeout time.Duration
	wait        int
	waitTimeout time.Duration
}

// WithPrefix starts every key with prefix instead of DefaultPrefix, so that
// several deployments can share one Redis database. It may not contain '{'
// or '}', which would change the keys' hash tag. It overrides the URL's
// prefix parameter.
func WithPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithWaitReplicas makes every commit wait, with Redis WAIT on the
// commit's own connection, until n replicas hold it, for at most timeout;
// a commit fewer replicas acknowledged returns an error wrapping
// ErrNotReplicated. n = 0 (the default) waits for none. The read timeout
// of the connections grows by timeout, so that a WAIT is never cut short
// by it.
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return func(c *config) { c.wait, c.waitTimeout = n, timeout }
}

// Open connects to the Redis deployment at rawURL (see the package
// documentation for the three forms), with the options go-redis's parser
// for that form accepts (dial_timeout, pool_size, ...), plus prefix=<key
// prefix>. It checks that the deployment answers (PING, through the
// Sentinels to the master for a Sentinel URL) before it returns; an error
// names the URL without its passwords.
func Open(rawURL string, opts ...Option) (*Store, error) {
	cfg := config{prefix: DefaultPrefix, pingTimeout: 10 * time.Second}
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, password and all
		}
		return nil, fmt.Errorf("redisstore: the store URL is not a URL: %v", err)
	}
	where := redact(u)
	q := u.Query()
	if q.Has("prefix") {
		cfg.prefix = q.Get("prefix")
		q.Del("prefix")
		u.RawQuery = q.Encode()
	}
	for _, o := range opts {
		o(&cfg)
	}
	if strings.ContainsAny(cfg.prefix, "{}") {
		return nil, fmt.Errorf("redisstore: key prefix %q contains a brace; braces would change the keys' Redis hash tag", cfg.prefix)
	}
	if cfg.wait < 0 || cfg.wait > 0 && cfg.waitTimeout <= 0 {
		return nil, fmt.Errorf("redisstore: waiting for %d replicas for %v: want 0 or more replicas, and a positive timeout when more than 0", cfg.wait, cfg.waitTimeout)
	}
	for _, p := range []string{"read_only", "replica_only", "route_by_latency", "route_randomly"} {
		if v := q.Get(p); v != "" && v != "false" && v != "0" {
			return nil, fmt.Errorf("redisstore: store URL %s: %s would read from replicas, which may not yet hold what the store just wrote; remove it", where, p)
		}
	}
	// readTimeout makes room for WAIT in the read timeout (0 is
	// go-redis's default of 3 s; a negative one is none).
	readTimeout := func(d time.Duration) time.Duration {
		if cfg.wait == 0 || d < 0 {
			return d
		}
		if d == 0 {
			d = 3 * time.Second
		}
		return d + cfg.waitTimeout
	}
	s := &Store{prefix: cfg.prefix, where: where, wait: cfg.wait, waitTimeout: cfg.waitTimeout}
	switch {
	case q.Has("master_name"):
		fo, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("redisstore: Sentinel store URL %s: %w", where, err)
		}
		if fo.MasterName == "" {
			return nil, fmt.Errorf("redisstore: Sentinel store URL %s: master_name is empty", where)
		}
		fo.ContextTimeoutEnabled = true // a cancelled context ends a command
		fo.ReadTimeout = readTimeout(fo.ReadTimeout)
		fo.OnConnect = connSetUp(fo.OnConnect)
		c := redis.NewFailoverClient(fo)
		c.AddHook(newConnHook{})
		s.c = c
	case q.Has("addr"):
		if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
			return nil, fmt.Errorf("redisstore: Cluster store URL %s: database %q; a Redis Cluster has database 0 only", where, p)
		}
		u.Path = ""
		co, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("redisstore: Cluster store URL %s: %w", where, err)
		}
		slices.Sort(co.Addrs)
		co.Addrs = slices.Compact(co.Addrs) // a one-seed cluster names its seed twice
		co.ContextTimeoutEnabled = true
		co.ReadTimeout = readTimeout(co.ReadTimeout)
		if co.MaintNotificationsConfig == nil {
			co.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		}
		newClient := co.NewClient
		if newClient == nil {
			newClient = redis.NewClient
		}
		co.OnConnect = connSetUp(co.OnConnect)
		co.NewClient = func(o *redis.Options) *redis.Client {
			c := newClient(o)
			c.AddHook(newConnHook{})
			s.nodeOptions.CompareAndSwap(nil, o)
			return c
		}
		s.cluster = redis.NewClusterClient(co)
		s.c = s.cluster
	default:
		ro, err := redis.ParseURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("redisstore: store URL %s: %w", where, err)
		}
		ro.ContextTimeoutEnabled = true
		ro.ReadTimeout = readTimeout(ro.ReadTimeout)
		// Maintenance notifications are for Redis Enterprise/Cloud
		// upgrades; asking a plain Redis for them costs a command per
		// connection.
		if ro.MaintNotificationsConfig == nil {
			ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		}
		ro.OnConnect = connSetUp(ro.OnConnect)
		c := redis.NewClient(ro)
		c.AddHook(newConnHook{})
		s.c = c
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.pingTimeout)
	defer cancel()
	if err := s.c.Ping(ctx).Err(); err != nil {
		_ = s.c.Close()
		return nil, fmt.Errorf("redisstore: Redis at %s does not answer: %w", where, err)
	}
	s.resends, s.minBackoff, s.maxBackoff = resendsOf(s.c)
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	s.tokenBase = binary.LittleEndian.Uint64(seed[:])
	return s, nil
}

// redact returns the URL without the password in its user part and
// without the value of a password parameter (a Sentinel URL's master
// password).
func redact(u *url.URL) string {
	c := *u
	if q := c.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		c.RawQuery = q.Encode()
	}
	return c.Redacted()
}

// Ping asks the server (a Sentinel's current master) to answer PING; on a
// cluster, every master must answer.
func (s *Store) Ping(ctx context.Context) error {
	var err error
	if s.cluster != nil {
		err = s.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
	} else {
		err = s.c.Ping(ctx).Err()
	}
	if err != nil {
		s.lost(err)
		return fmt.Errorf("redisstore: ping %s: %w", s.where, err)
	}
	return nil
}

// MaxmemoryPolicies returns the maxmemory-policy (CONFIG GET) of the
// server (a Sentinel's current master), or of every master of a
// cluster, by where it is: the store's URL without passwords for one
// server or a Sentinel's master, a master's address on a cluster. The
// store needs noeviction: every key it writes has an expiry, so under
// any other policy (volatile-* as allkeys-*) a full Redis evicts parts of
// live sessions, found as DATA_LOSS, where with noeviction it refuses
// the commit and nothing is lost. An error when a server refuses CONFIG
// (managed Redis often renames or forbids it).
func (s *Store) MaxmemoryPolicies(ctx context.Context) (map[string]string, error) {
	get := func(ctx context.Context, c *redis.Client) (string, error) {
		m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			return "", err
		}
		p, ok := m["maxmemory-policy"]
		if !ok {
			return "", errors.New("CONFIG GET maxmemory-policy answered no value")
		}
		return p, nil
	}
	out := map[string]string{}
	if s.cluster == nil {
		c, ok := s.c.(*redis.Client)
		if !ok {
			return nil, fmt.Errorf("redisstore: no single server to ask on a %T", s.c)
		}
		p, err := get(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("redisstore: maxmemory-policy of %s: %w", s.where, err)
		}
		out[s.where] = p
		return out, nil
	}
	var mu sync.Mutex
	err := s.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		p, err := get(ctx, c)
		if err != nil {
			return fmt.Errorf("master %s: %w", c.Options().Addr, err)
		}
		mu.Lock()
		out[c.Options().Addr] = p
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redisstore: maxmemory-policy of %s: %w", s.where, err)
	}
	return out, nil
}

// maxLag is the commit script's largest lag (in seconds, as text) of a
// replica that counts for WithWaitReplicas.
func (s *Store) maxLag() string {
	return strconv.FormatInt(int64(math.Ceil(max(maxReplicaLag, s.waitTimeout).Seconds())), 10)
}

// checkTTL is the expiry of the keys Check writes: they outlive a few
// checks, and are gone soon after the last acpnormd stops.
const checkTTL = 10 * time.Second

// checkScript: KEYS[1] = a readiness key (see Check), ARGV = replicas
// required (0: none), the largest lag (s) of a replica that counts, the
// key's expiry (ms). It does what a commit does before it writes and then
// writes: counts the replicas as the commit script does, answering -2
// and writing nothing when too few are online, and else sets the key,
// with its expiry, and answers 1. A Redis that refuses writes (a full
// one with noeviction: "OOM command not allowed"; a replica; one whose
// disk failed a save with stop-writes-on-bgsave-error) fails the SET as it
// would fail the commit.
var checkScript = redis.NewScript(replicasSource + `
if not enoughReplicas(tonumber(ARGV[1]), tonumber(ARGV[2])) then return -2 end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[3])
return 1
`)

// Check reports whether the store would take a commit now (see
// store.Checker): on the server (a Sentinel's current master), and on a
// cluster on every master that serves slots, it runs checkScript, which
// counts the master's replicas as a commit does (WithWaitReplicas) and
// writes one key of the store's prefix, outside every session (no session
// key has a letter right after the prefix), with a 10 s expiry. One round
// trip, and one per master on a cluster (plus CLUSTER SHARDS, to find a
// slot of each); the masters are asked at once. It does not WAIT: a
// replica that is online but slow to acknowledge is the commits' own
// timeout to judge.
func (s *Store) Check(ctx context.Context) error {
	var err error
	if s.cluster != nil {
		err = s.checkCluster(ctx)
	} else {
		err = s.checkOn(ctx, s.c, s.prefix+"readiness")
	}
	if err != nil {
		s.lost(err)
		return fmt.Errorf("redisstore: readiness check of %s: %w", s.where, err)
	}
	return nil
}

// checkOn runs checkScript on the key (on c, or the node c routes it to).
func (s *Store) checkOn(ctx context.Context, c redis.Scripter, key string) error {
	r, err := checkScript.Run(ctx, c, []string{key}, s.wait, s.maxLag(), checkTTL.Milliseconds()).Int64()
	switch {
	case err != nil:
		return err
	case r == -2:
		return fmt.Errorf("%w: %d asked for (WithWaitReplicas)", ErrTooFewReplicas, s.wait)
	}
	return nil
}

// NodeError is what the readiness check found on a Cluster for some of
// its slots: the master that serves them would refuse a commit, or no
// master serves them (Addr is empty).
type NodeError struct {
	Addr  string // the master's address, as the store reaches it
	Slots string // the slots, as ranges: "0-5460,10923-16383"
	Err   error  // why
}

func (e *NodeError) Error() string {
	if e.Addr == "" {
		return "slots " + e.Slots + ": " + e.Err.Error()
	}
	return "master " + e.Addr + " (slots " + e.Slots + "): " + e.Err.Error()
}

func (e *NodeError) Unwrap() error { return e.Err }

// ClusterError is the readiness check's error on a Cluster (see Check),
// by address (the slots no master serves first): each part of the
// cluster that would refuse a commit, and the others take commits.
type ClusterError []*NodeError

func (e ClusterError) Error() string {
	parts := make([]string, len(e))
	for i, n := range e {
		parts[i] = n.Error()
	}
	return strings.Join(parts, "; ")
}

func (e ClusterError) Unwrap() []error {
	errs := make([]error, len(e))
	for i, n := range e {
		errs[i] = n
	}
	return errs
}

// errUnserved is the error of slots no master serves.
var errUnserved = errors.New("no master serves them")

// checkCluster checks every master that serves slots, as CLUSTER SHARDS
// says, each with a key of one of its slots, on the master the store's
// cluster client sends that slot's commits to, and finds the slots no
// master serves. It fails with a ClusterError naming each master that
// would refuse a commit, with its slots, and the slots without one; a
// node that serves no slot (a replica, a master whose replica took its
// slots) is not asked, so a cluster whose every slot is served passes.
func (s *Store) checkCluster(ctx context.Context) error {
	shards, err := s.clusterShards(ctx)
	if err != nil {
		return fmt.Errorf("CLUSTER SHARDS: %w", err)
	}
	type master struct {
		addr, slots string
		slot        int
	}
	var masters []master
	var served [16384]bool
	for _, sh := range shards {
		mi := slices.IndexFunc(sh.Nodes, func(n redis.Node) bool { return n.Role == "master" })
		if len(sh.Slots) == 0 || mi < 0 {
			continue
		}
		var rs []string
		for _, r := range sh.Slots {
			for slot := max(r.Start, 0); slot <= min(r.End, 16383); slot++ {
				served[slot] = true
			}
			rs = append(rs, slotRange(r.Start, r.End))
		}
		n := sh.Nodes[mi]
		port := cmp.Or(n.Port, n.TLSPort)
		masters = append(masters, master{net.JoinHostPort(cmp.Or(n.Endpoint, n.IP), strconv.FormatInt(port, 10)), strings.Join(rs, ","), int(sh.Slots[0].Start)})
	}
	var failed ClusterError
	var unserved []string
	for i := 0; i < len(served); i++ {
		if !served[i] {
			j := i
			for j+1 < len(served) && !served[j+1] {
				j++
			}
			unserved = append(unserved, slotRange(int64(i), int64(j)))
			i = j
		}
	}
	if len(unserved) > 0 {
		failed = append(failed, &NodeError{Slots: strings.Join(unserved, ","), Err: errUnserved})
	}
	var wg sync.WaitGroup
	errs := make([]*NodeError, len(masters))
	for i, m := range masters {
		wg.Go(func() {
			if addr, err := s.checkSlot(ctx, s.prefix+"readiness:{"+slotTag(m.slot)+"}"); err != nil {
				errs[i] = &NodeError{Addr: cmp.Or(addr, m.addr), Slots: m.slots, Err: err}
			}
		})
	}
	wg.Wait()
	errs = slices.DeleteFunc(errs, func(e *NodeError) bool { return e == nil })
	slices.SortFunc(errs, func(a, b *NodeError) int { return cmp.Compare(a.Addr, b.Addr) })
	if failed = append(failed, errs...); len(failed) == 0 {
		return nil
	}
	return failed
}

// checkSlot runs checkScript on key on the master the cluster client
// sends the key's commands to, and returns its address. A master that
// answers MOVED or ASK (the client's map of the slots is old, or the slot
// moves) leaves the key to the cluster client, which follows them, as it
// would a commit; the address is then the one they named.
func (s *Store) checkSlot(ctx context.Context, key string) (string, error) {
	node, err := s.cluster.MasterForKey(ctx, key)
	if err != nil {
		return "", err
	}
	addr := node.Options().Addr
	err = s.checkOn(ctx, node, key)
	to, moved := redis.IsMovedError(err)
	if a, ask := redis.IsAskError(err); ask {
		to, moved = a, true
	}
	if moved {
		s.cluster.ReloadState(ctx)
		addr, err = askAddr(to), s.checkOn(ctx, s.cluster, key)
	}
	return addr, err
}

// clusterShards returns CLUSTER SHARDS, from the node the cluster client
// chooses, or when that node fails it (it refuses the command, or is down
// past the client's own retries) from the first of the others that
// answers.
func (s *Store) clusterShards(ctx context.Context) ([]redis.ClusterShard, error) {
	shards, err := s.cluster.ClusterShards(ctx).Result()
	if err == nil {
		return shards, nil
	}
	shards = nil
	var once sync.Once
	_ = s.cluster.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		if sh, e := c.ClusterShards(ctx).Result(); e == nil {
			once.Do(func() { shards = sh })
		}
		return nil
	})
	if shards != nil {
		return shards, nil
	}
	return nil, err
}

// slotRange writes the slots start to end as "start-end", or "start"
// for one.
func slotRange(start, end int64) string {
	if start == end {
		return strconv.FormatInt(start, 10)
	}
	return strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(end, 10)
}

// slotTags caches slotTag's answers.
var slotTags sync.Map // int -> string

// slotTag returns a short hash tag whose key slot is slot (0 to 16383):
// the first decimal number that hashes there (Redis Cluster's slot is
// CRC16-XMODEM of the tag, modulo 16384).
func slotTag(slot int) string {
	if t, ok := slotTags.Load(slot); ok {
		return t.(string)
	}
	for i := 0; ; i++ {
		t := strconv.Itoa(i)
		if int(crc16([]byte(t))%16384) == slot {
			slotTags.Store(slot, t)
			return t
		}
	}
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the hash
// of Redis Cluster's key slots.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Close closes the store's connections.
func (s *Store) Close() error {
	s.askMu.Lock()
	for _, c := range s.asked {
		_ = c.Close()
	}
	s.asked, s.closed = nil, true
	s.askMu.Unlock()
	if err := s.c.Close(); err != nil {
		return fmt.Errorf("redisstore: closing the connections to %s: %w", s.where, err)
	}
	return nil
}

// keys returns the session's hash key and the key of its set of stream
// names; a stream's key is the hash key + ":s:" + its name.
func (s *Store) keys(session string) []string {
	id := base64.RawURLEncoding.EncodeToString([]byte(session))
	if id == "" {
		id = "=" // not a base64url character: no other id encodes to it
	}
	h := s.prefix + "{" + id + "}"
	return []string{h, h + ":k"}
}

// The scripts take KEYS[1] = the session's hash, KEYS[2] = its set of
// stream names; a stream's key is KEYS[1] .. ':s:' .. g .. ':' .. name,
// where g is the hash's field g (in the same slot as both).

// commitScript: ARGV = base, ttl (ms), token (32 bytes), header flag ('1':
// set), header, record count n, replicas required (0: none), the largest
// lag (s) of a replica that counts, then n times (name, flag ('1' set, '0'
// delete), value), then per stream op (name, op ('a' append, 's' set, 'd'
// delete), data). Returns the new version, -1 on a conflict, or -2 (and
// writes nothing) when fewer replicas than required are online within
// the lag; the moving error (writing nothing) while the session's keys
// are split between two nodes (see hereSource).
var commitScript = newScript(commitSource)

const commitSource = hereSource + replicasSource + `
local h, k = KEYS[1], KEYS[2]
local st = redis.call('HMGET', h, 'v', 'c', 'g', 'x')
local cur = tonumber(st[1] or '0')
local base = tonumber(ARGV[1])
local tok = ARGV[3]
if cur ~= base then
  -- c holds the last 8 commits, newest first, each its token (32 bytes)
  -- and the version it made (20 digits): is this very commit, sent again
  -- after a lost reply, among them?
  local c = st[2] or ''
  for j = 0, 7 do
    local e = string.sub(c, j * 52 + 1, j * 52 + 52)
    if #e == 52 and string.sub(e, 1, 32) == tok then
      -- Waiting for replicas, the version is written again as it is:
      -- the WAIT after it counts the replicas that hold this
      -- connection's writes (see confirmScript), and this one, new
      -- after a lost reply, may have written nothing yet.
      if tonumber(ARGV[7]) > 0 then redis.call('HSET', h, 'v', st[1]) end
      return tonumber(string.sub(e, 33))
    end
  end
  return -1
end
if not enoughReplicas(tonumber(ARGV[7]), tonumber(ARGV[8])) then return -2 end
local g, x = st[3] or '', tonumber(st[4] or '0')
-- a new generation: streams an expired session of this id left behind
-- (they outlive its hash by at most one TTL) are out of reach
if cur == 0 then g, x = tok, 0 end
local ttl = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Streams expire at x, which stays between one and two TTLs ahead: all of
-- them are pushed out only when x comes closer than one TTL.
local refresh = x < now + ttl
local sp = streamPrefix(h, g)
-- Before writing anything: every stream key this commit touches must be
-- on this node (see Resharding in the package documentation).
local ops, kinds = {}, {}
for j = 9 + 3 * tonumber(ARGV[6]), #ARGV, 3 do
  local n = #ops + 1
  ops[n], kinds[n] = ARGV[j], ARGV[j + 1]
end
local listed = {}
if cur > 0 then
  if refresh then
    for _, name in ipairs(names(h, k)) do listed[name] = true end
  else
    -- (in steps: unpack gives Lua at most about 8000 values)
    for j = 1, #ops, 1000 do
      local m = redis.call('SMISMEMBER', k, unpack(ops, j, math.min(j + 999, #ops)))
      for i = 1, #m do
        if m[i] == 1 then listed[ops[j + i - 1]] = true end
      end
    end
    if listed[''] and not isStream(h, '') then listed[''] = nil end
  end
end
-- (deleting a stream the set does not list touches no key)
local have, new = {}, {}
for name in pairs(listed) do have[#have + 1] = sp .. name end
for j = 1, #ops do
  if not listed[ops[j]] and kinds[j] ~= 'd' then
    new[#new + 1] = sp .. ops[j]
  end
end
if not here(h, have, new) then return moving end
-- The first write is one Redis refuses when it is full (maxmemory with
-- noeviction: OOM): after a write, Redis lets a script go on past
-- maxmemory, since it cannot stop it halfway, and DEL is let through
-- when full.
if cur == 0 then
  redis.call('HSET', h, 'g', g)
  redis.call('DEL', k)
end
redis.call('SADD', k, '')
if refresh then
  x = now + 2 * ttl
  redis.call('HSET', h, 'x', string.format('%.0f', x))
end
local xs = string.format('%.0f', x)
if ARGV[4] == '1' then redis.call('HSET', h, 'h', ARGV[5]) end
local i = 9
for _ = 1, tonumber(ARGV[6]) do
  if ARGV[i + 1] == '1' then
    redis.call('HSET', h, 'r:' .. ARGV[i], ARGV[i + 2])
  else
    redis.call('HDEL', h, 'r:' .. ARGV[i])
  end
  i = i + 3
end
-- listed follows the commit's writes: on refresh it is then every stream
-- the session has, pushed out below without reading the set again.
while i <= #ARGV do
  local name, op = ARGV[i], ARGV[i + 1]
  local sk = sp .. name
  if op == 'd' then
    if listed[name] then
      listed[name] = nil
      redis.call('DEL', sk)
      if name == '' then redis.call('HDEL', h, 'e') else redis.call('SREM', k, name) end
    end
  else
    listed[name] = true
    if name == '' then redis.call('HSET', h, 'e', '1') end
    if op == 'a' then
      redis.call('APPEND', sk, ARGV[i + 2])
    else
      redis.call('SET', sk, ARGV[i + 2])
    end
    redis.call('SADD', k, name)
    if not refresh then redis.call('PEXPIREAT', sk, xs) end
  end
  i = i + 3
end
-- The new version is above the clock's milliseconds times 1024, plus a
-- jump drawn from the token: never a number a lost commit had (a replica
-- promoted while behind its master holds an older version; counting up
-- from there by one would give the lost numbers again, and a replica
-- that cached the session at one of them would take the other history
-- for its own).
-- The jump mixes the token's first hex digits (random per Store) with
-- the low byte of its commit counter (see Commit). v is written as a plain
-- integer (an older build's HINCRBY reads it); c's entries pad it.
local jump = ((tonumber(string.sub(tok, 1, 4), 16) or 0) + 37 * (tonumber(string.sub(tok, 17, 18), 16) or 0)) % 1024
local v = math.max(cur + 1, now * 1024) + jump
redis.call('HSET', h, 'v', string.format('%.0f', v))
redis.call('HSET', h, 'c', tok .. string.format('%020.0f', v) .. string.sub(st[2] or '', 1, 7 * 52))
redis.call('PEXPIRE', h, ttl)
redis.call('PEXPIRE', k, ttl)
if refresh then
  for name in pairs(listed) do redis.call('PEXPIREAT', sp .. name, xs) end
end
return v
`

// replicasSource defines enoughReplicas(need, maxlag), which reports
// whether need or more of this master's replicas are online and
// acknowledged its stream within the last maxlag seconds (INFO
// replication's lag); true at once when need is 0. The commit script and
// the readiness check (checkScript) count the same way.
const replicasSource = `
local function enoughReplicas(need, maxlag)
  if need <= 0 then return true end
  local online = 0
  local info = redis.call('INFO', 'replication')
  for line in string.gmatch(info, 'slave%d+:[^\r\n]+') do
    -- lag is the seconds since the replica's last acknowledgement; Redis
    -- shows -1 for one just now (its clock is cached per event loop turn)
    local lag = tonumber(string.match(line, 'lag=(-?%d+)') or '0')
    if string.find(line, 'state=online', 1, true) and lag <= maxlag then
      online = online + 1
    end
  end
  return online >= need
end
`

// hereSource starts each script: the rule for which members of the name
// set are streams (isStream), the streams' keys (streamPrefix,
// streamKeys), and here(h, have, new), which reports whether
// the keys a script is about to touch are all on this node, where h is
// the session's hash (on this node, as a declared key), have are keys
// that exist (the streams the name set lists) and new are keys that do
// not (streams about to be made). It is false only while the session's
// slot moves between nodes (resharding) and some of them are on the
// other node; the script then answers moving, having written nothing.
//
// Redis checks the declared keys (the hash and the name set) before it
// runs a script, but a stream's key, built inside, only when the script
// reaches it: a script that wrote and then touched a stream already moved
// would stop halfway (its writes kept), and one running on the importing
// node (ASKING) would find a stream not moved yet missing, and read it as
// empty or write it anew. So the scripts ask first. In one multi-key
// EXISTS with the hash, a key of the slot that is not here fails with
// TRYAGAIN on either node of a migration (and is a plain count
// elsewhere); a single-key EXISTS of a new key fails with ASK on the node
// the slot leaves (its new keys are made on the other). A call that
// fails inside a script is seen through redis.pcall.
const hereSource = `
local moving = redis.error_reply('TRYAGAIN the session is moving between Redis Cluster nodes; nothing was written')
-- isStream(h, name) reports whether a member of the name set is a
-- stream: each is but the empty member, which keeps the set in being
-- (see Resharding) and is a stream only while the hash has the field e.
local function isStream(h, name)
  return name ~= '' or redis.call('HEXISTS', h, 'e') == 1
end
-- streamPrefix(h, g) starts the keys of the streams of generation g.
local function streamPrefix(h, g)
  return h .. ':s:' .. (g or '') .. ':'
end
-- names(h, k) lists the session's streams.
local function names(h, k)
  local all, out = redis.call('SMEMBERS', k), {}
  for j = 1, #all do
    if isStream(h, all[j]) then out[#out + 1] = all[j] end
  end
  return out
end
-- streamKeys(h, k, g) lists the session's streams and their keys, of
-- generation g.
local function streamKeys(h, k, g)
  local sp, ns, keys = streamPrefix(h, g), names(h, k), {}
  for j = 1, #ns do keys[j] = sp .. ns[j] end
  return ns, keys
end
local function here(h, have, new)
  for j = 1, #have, 1000 do
    local r = redis.pcall('EXISTS', h, unpack(have, j, math.min(j + 999, #have)))
    if type(r) == 'table' and r.err then return false end
  end
  for j = 1, #new do
    local r = redis.pcall('EXISTS', new[j])
    if type(r) == 'table' and r.err then return false end
  end
  return true
end
`

// streamsSource defines streams(ns, have): {name, data, ...} of the
// session's streams that exist, of their names ns and keys have
// (streamKeys), for the load scripts.
const streamsSource = `
local function streams(ns, have)
  local out = {}
  for j = 1, #ns do
    local d = redis.call('GET', have[j])
    if d then
      out[#out + 1] = ns[j]
      out[#out + 1] = d
    end
  end
  return out
end
`

// loadScript returns {} for an absent session, else {HGETALL of the hash,
// {name, data, name, data, ...} of the streams}; the moving error while
// the session's keys are split between two nodes.
var loadScript = redis.NewScript(hereSource + streamsSource + `
local h, k = KEYS[1], KEYS[2]
local all = redis.call('HGETALL', h)
if #all == 0 then return {} end
local ns, have = streamKeys(h, k, redis.call('HGET', h, 'g'))
if not here(h, have, {}) then return moving end
return {all, streams(ns, have)}
`)

// loadWithoutScript is loadScript, but the records whose names start
// with ARGV[1] are left out of the hash's fields: a third list holds
// {name, length, ...} of them, so that their bytes are not sent.
var loadWithoutScript = redis.NewScript(hereSource + streamsSource + `
local h, k = KEYS[1], KEYS[2]
local all = redis.call('HGETALL', h)
if #all == 0 then return {} end
local ns, have = streamKeys(h, k, redis.call('HGET', h, 'g'))
if not here(h, have, {}) then return moving end
local p = 'r:' .. ARGV[1]
local fields, sizes = {}, {}
for j = 1, #all, 2 do
  if string.sub(all[j], 1, #p) == p then
    sizes[#sizes + 1] = string.sub(all[j], 3)
    sizes[#sizes + 1] = #all[j + 1]
  else
    fields[#fields + 1] = all[j]
    fields[#fields + 1] = all[j + 1]
  end
end
return {fields, streams(ns, have), sizes}
`)

// deleteScript: ARGV = base. Returns 0, or -1 on a conflict; the moving
// error while the session's keys are split between two nodes.
var deleteScript = redis.NewScript(hereSource + `
local h, k = KEYS[1], KEYS[2]
local st = redis.call('HMGET', h, 'v', 'g')
if tonumber(st[1] or '0') ~= tonumber(ARGV[1]) then return -1 end
local _, have = streamKeys(h, k, st[2])
if st[1] and not here(h, have, {}) then return moving end
for j = 1, #have do redis.call('DEL', have[j]) end
redis.call('DEL', k, h)
return 0
`)

// Load returns the session at its current version.
func (s *Store) Load(ctx context.Context, session string) (*store.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redisstore: load %q: %w", session, err)
	}
	res, err := loadScript.Run(ctx, s.c, s.keys(session)).Slice()
	if err != nil {
		s.lost(err)
		return nil, fmt.Errorf("redisstore: load %q from %s: %w", session, s.where, err)
	}
	return s.snapshot(session, res, false)
}

// LoadWithout is Load, but the records whose names start with prefix
// stay in Redis: only their lengths come (Sizes), in the same script.
func (s *Store) LoadWithout(ctx context.Context, session, prefix string) (*store.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redisstore: load %q: %w", session, err)
	}
	res, err := loadWithoutScript.Run(ctx, s.c, s.keys(session), prefix).Slice()
	if err != nil {
		s.lost(err)
		return nil, fmt.Errorf("redisstore: load %q from %s: %w", session, s.where, err)
	}
	return s.snapshot(session, res, true)
}

// LoadRecord returns one record of the session with one HGET (nil when
// the session or the record is absent).
func (s *Store) LoadRecord(ctx context.Context, session, name string) ([]byte, error) {
	v, err := s.c.HGet(ctx, s.keys(session)[0], "r:"+name).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		s.lost(err)
		return nil, fmt.Errorf("redisstore: record %q of %q from %s: %w", name, session, s.where, err)
	}
	return []byte(v), nil
}

// snapshot decodes what loadScript (or loadWithoutScript, sized) answered.
func (s *Store) snapshot(session string, res []any, sized bool) (*store.Snapshot, error) {
	snap := &store.Snapshot{Records: map[string][]byte{}, Streams: map[string][]byte{}}
	if sized {
		snap.Sizes = map[string]int{}
	}
	if len(res) == 0 {
		return snap, nil
	}
	bad := func(what string) error {
		return fmt.Errorf("redisstore: load %q from %s: the stored session is malformed (%s)", session, s.where, what)
	}
	if !sized && len(res) != 2 || sized && len(res) != 3 {
		return nil, bad("reply shape")
	}
	if sized {
		sizes, ok := res[2].([]any)
		if !ok || len(sizes)%2 != 0 {
			return nil, bad("reply shape")
		}
		for i := 0; i < len(sizes); i += 2 {
			n, ok1 := sizes[i].(string)
			l, ok2 := sizes[i+1].(int64)
			if !ok1 || !ok2 || l < 0 {
				return nil, bad("record size")
			}
			snap.Sizes[n] = int(l)
		}
	}
	fields, ok1 := res[0].([]any)
	streams, ok2 := res[1].([]any)
	if !ok1 || !ok2 || len(fields)%2 != 0 || len(streams)%2 != 0 {
		return nil, bad("reply shape")
	}
	for i := 0; i < len(fields); i += 2 {
		f, ok1 := fields[i].(string)
		v, ok2 := fields[i+1].(string)
		if !ok1 || !ok2 {
			return nil, bad("hash field")
		}
		switch {
		case f == "v":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n == 0 {
				return nil, bad("version " + strconv.Quote(v))
			}
			snap.Version = n
		case f == "h":
			snap.Header = []byte(v)
		case strings.HasPrefix(f, "r:"):
			snap.Records[f[2:]] = []byte(v)
		}
	}
	if snap.Version == 0 {
		return nil, bad("no version")
	}
	for i := 0; i < len(streams); i += 2 {
		n, ok1 := streams[i].(string)
		d, ok2 := streams[i+1].(string)
		if !ok1 || !ok2 {
			return nil, bad("stream")
		}
		snap.Streams[n] = []byte(d)
	}
	return snap, nil
}

// Version returns the session's version with one HGET (0 when absent).
func (s *Store) Version(ctx context.Context, session string) (uint64, error) {
	v, err := s.c.HGet(ctx, s.keys(session)[0], "v").Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redisstore: version of %q from %s: %w", session, s.where, err)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redisstore: version of %q from %s: the stored version %q is malformed", session, s.where, v)
	}
	return n, nil
}

// Commit applies c when the session is still at version base.
func (s *Store) Commit(ctx context.Context, session string, base uint64, c *store.Change) (uint64, error) {
	if c == nil {
		return 0, fmt.Errorf("redisstore: commit %q: %w: no change (nil *store.Change)", session, store.ErrNotApplied)
	}
	ms := c.TTL.Milliseconds()
	if c.TTL <= 0 {
		return 0, fmt.Errorf("redisstore: commit %q: %w: TTL %v; it must be positive", session, store.ErrNotApplied, c.TTL)
	}
	if ms == 0 {
		ms = 1 // under a millisecond: Redis's finest expiry
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("redisstore: commit %q: %w: %w", session, store.ErrNotApplied, err)
	}
	var raw [16]byte
	binary.LittleEndian.PutUint64(raw[:8], s.tokenBase)
	binary.LittleEndian.PutUint64(raw[8:], s.tokenSeq.Add(1))
	var token [32]byte
	hex.Encode(token[:], raw[:])

	args := make([]any, 0, 8+3*len(c.Records)+3*len(c.Streams))
	hflag := "0"
	if c.Header != nil {
		hflag = "1"
	}
	args = append(args, strconv.FormatUint(base, 10), strconv.FormatInt(ms, 10), token[:], hflag, nonNil(c.Header), strconv.Itoa(len(c.Records)),
		strconv.Itoa(s.wait), s.maxLag())
	for name, v := range c.Records {
		flag := "1"
		if v == nil {
			flag = "0"
		}
		args = append(args, name, flag, nonNil(v))
	}
	for _, op := range c.Streams {
		kind := "s"
		switch {
		case op.Delete:
			kind = "d"
		case op.Append:
			kind = "a"
		}
		args = append(args, op.Name, kind, nonNil(op.Data))
	}
	keys := s.keys(session)
	v, _, unsure, err := s.send(ctx, func() (int64, int64, error) {
		if s.wait == 0 {
			v, err := s.evalOnce(ctx, commitScript, keys, args)
			return v, 0, err
		}
		v, err := s.commitAndWait(ctx, keys, args)
		return v, 0, err
	})
	if err != nil {
		s.lost(err)
		switch {
		case !unsure:
			err = fmt.Errorf("%w: %w", store.ErrNotApplied, err)
		case refused(err):
			err = fmt.Errorf("%w (an earlier sending got no answer: it may have been applied)", err)
		}
		return 0, fmt.Errorf("redisstore: commit %q at version %d to %s: %w", session, base, s.where, err)
	}
	if v == -2 {
		err := ErrTooFewReplicas
		if !unsure {
			err = fmt.Errorf("%w: %w", store.ErrNotApplied, err)
		}
		return 0, fmt.Errorf("redisstore: commit %q at version %d to %s: %w: %d asked for (WithWaitReplicas)", session, base, s.where, err, s.wait)
	}
	if v < 0 {
		return 0, store.ErrConflict
	}
	if uint64(v) <= base {
		return 0, fmt.Errorf("redisstore: commit %q at version %d to %s: the script answered version %d", session, base, s.where, v)
	}
	return uint64(v), nil
}

// commitAndWait runs the commit script and WAIT in one pipeline on one
// connection to the master of the session's keys, and returns the
// script's answer; an error wrapping ErrNotReplicated when the script
// committed but fewer than s.wait replicas acknowledged it in time.
func (s *Store) commitAndWait(ctx context.Context, keys []string, args []any) (int64, error) {
	v, acked, err := s.runAndWait(ctx, commitScript, keys, args)
	if err != nil {
		return 0, err
	}
	if v >= 0 && acked < int64(s.wait) {
		return 0, fmt.Errorf("%w: version %d is applied on the master, but %d of the %d replicas asked for held it within %v", ErrNotReplicated, v, acked, s.wait, s.waitTimeout)
	}
	return v, nil
}

// runAndWait runs script and WAIT in one pipeline on one connection to
// the master of the session's keys, and returns the script's answer and
// WAIT's (the replicas that hold what the connection wrote).
//
// While the slot moves (resharding), the master answers ASK once the
// session's keys have left it; the pipeline then goes, after ASKING, to
// the node the ASK names, which holds them. A script that finds the keys
// split between the two answers TRYAGAIN, and is sent again a little
// later.
func (s *Store) runAndWait(ctx context.Context, script luaScript, keys []string, args []any) (v, acked int64, err error) {
	const moves = 6 // a slot that moves this often while one commit is sent is not worth chasing
	var ask *redis.Client
	for attempt := 1; ; attempt++ {
		var node *redis.Client
		asking := ask != nil
		switch {
		case asking:
			node, ask = ask, nil
		case s.cluster != nil:
			var err error
			if node, err = s.cluster.MasterForKey(ctx, keys[0]); err != nil {
				return 0, 0, err
			}
		default:
			var ok bool
			if node, ok = s.c.(*redis.Client); !ok {
				return 0, 0, fmt.Errorf("redisstore: no single connection for WAIT on a %T", s.c)
			}
		}
		v, acked, err := s.pipeWait(ctx, node, asking, script, keys, args)
		if addr, ok := redis.IsAskError(err); ok && s.cluster != nil && attempt < moves {
			if ask = s.askClient(addr); ask != nil {
				continue // at once: the node that holds the keys now
			}
		}
		if s.cluster != nil && err != nil {
			// The slot moved, or its master went away: the cluster
			// client's view is old. A redirected script did not run.
			s.cluster.ReloadState(ctx)
			if redirected(err) && attempt < moves {
				select {
				case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
					continue
				case <-ctx.Done():
					return 0, 0, ctx.Err()
				}
			}
		}
		return v, acked, err
	}
}

// askClient returns a client of the cluster node at addr, made with the
// options go-redis gives its own node clients; nil once the store is
// closed. An ASK comes from a node client, so the options are there; a
// go-redis that built its node clients otherwise would get nil (the
// commit then reloads the cluster's view), not a panic.
func (s *Store) askClient(addr string) *redis.Client {
	addr = askAddr(addr)
	s.askMu.Lock()
	defer s.askMu.Unlock()
	tmpl := s.nodeOptions.Load()
	if s.closed || tmpl == nil {
		return nil
	}
	if c, ok := s.asked[addr]; ok {
		return c
	}
	if s.asked == nil {
		s.asked = map[string]*redis.Client{}
	}
	o := *tmpl // NewClient copies it again, MaintNotificationsConfig too
	o.Addr, o.NodeAddress = addr, addr
	c := redis.NewClient(&o) // o.OnConnect is connSetUp's, as the cluster's
	c.AddHook(newConnHook{})
	s.asked[addr] = c
	return c
}

// askAddr is the address an ASK names as a dialer takes it: Redis
// writes an IPv6 node as "fe80::1:6379", without brackets.
func askAddr(addr string) string {
	i := strings.LastIndexByte(addr, ':')
	if i <= 0 || addr[0] == '[' || strings.IndexByte(addr[:i], ':') < 0 {
		return addr
	}
	return net.JoinHostPort(addr[:i], addr[i+1:])
}

// pipeWait sends script (by its SHA1, or whole when the server does not
// know it) and WAIT in one pipeline, which go-redis writes on one
// connection; after ASKING when asking (the node an ASK named).
func (s *Store) pipeWait(ctx context.Context, node *redis.Client, asking bool, script luaScript, keys []string, args []any) (v, acked int64, err error) {
	for _, whole := range []bool{false, true} {
		var run *redis.Cmd
		var wait *redis.IntCmd
		tctx, wrap := tracked(ctx)
		_, err = node.Pipelined(tctx, func(p redis.Pipeliner) error {
			if asking {
				if err := p.Process(ctx, redis.NewStatusCmd(ctx, "asking")); err != nil {
					return err
				}
			}
			run = script.cmd(ctx, whole, keys, args)
			if err := p.Process(ctx, once{run}); err != nil {
				return err
			}
			wait = redis.NewIntCmd(ctx, "wait", s.wait, max(1, s.waitTimeout.Milliseconds())) // WAIT n 0 would wait forever
			return p.Process(ctx, wait)
		})
		if !whole && redis.HasErrorPrefix(run.Err(), "NOSCRIPT") {
			continue // it did not run: send it whole
		}
		if v, err = run.Int64(); err != nil {
			return 0, 0, wrap(err)
		}
		if acked, err = wait.Result(); err != nil {
			return 0, 0, fmt.Errorf("WAIT after the script (its writes may have been applied): %w", err)
		}
		return v, acked, nil
	}
	return 0, 0, err
}

// confirmScript writes the session's version again as it is (KEYS[1] is
// the session's hash), and returns 1; 0, writing nothing, when there is
// no session. The write is what Confirm's WAIT counts on: WAIT waits for
// the replicas to reach the master's replication offset as of the
// connection's last write (Redis 7.2 and later; 7.0 takes it after any
// command), and a connection that wrote nothing gets an answer at once,
// whatever the replicas hold. Written now, that offset is past every
// commit the session had.
var confirmScript = newScript(`
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return 0 end
redis.call('HSET', KEYS[1], 'v', v)
return 1
`)

// Confirm returns once the replicas WithWaitReplicas asks for hold every
// commit the session had, or an error wrapping ErrNotReplicated (and so
// store.ErrUnacknowledged) when fewer of them do within its timeout; at
// once, with no round trip, without WithWaitReplicas. It costs one round
// trip to the session's master, which writes the session's version
// again as it is, and the WAIT. A session that is not there (expired,
// deleted, or lost in a failover) has nothing to confirm: an error
// wrapping store.ErrUnacknowledged.
func (s *Store) Confirm(ctx context.Context, session string) error {
	if s.wait == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: confirm %q: %w", session, err)
	}
	v, acked, _, err := s.send(ctx, func() (int64, int64, error) {
		return s.runAndWait(ctx, confirmScript, s.keys(session), nil)
	})
	if err != nil {
		s.lost(err)
		return fmt.Errorf("redisstore: confirm %q at %s: %w", session, s.where, err)
	}
	if v == 0 {
		return fmt.Errorf("redisstore: confirm %q at %s: %w: the session is not there (expired, deleted or lost)", session, s.where, store.ErrUnacknowledged)
	}
	if acked < int64(s.wait) {
		return fmt.Errorf("redisstore: confirm %q at %s: %w: %d of the %d replicas asked for held its commits within %v", session, s.where, ErrNotReplicated, acked, s.wait, s.waitTimeout)
	}
	return nil
}

// Confirms reports whether Confirm has anything to do: whether the store
// waits for replicas (WithWaitReplicas).
func (s *Store) Confirms() bool { return s.wait > 0 }

// lost has a cluster client look for the slots' masters again after an
// error that was no answer of Redis (a master that died does not answer
// MOVED; its replica took its slots), so that the next command reaches
// the one that serves them now. It costs nothing until the next command.
func (s *Store) lost(err error) {
	var reply redis.Error
	if s.cluster != nil && !errors.As(err, &reply) {
		s.cluster.ReloadState(context.Background())
	}
}

// redirected reports whether a cluster node answered that the key's slot
// is served elsewhere (MOVED, ASK) or is not served (CLUSTERDOWN, TRYAGAIN).
func redirected(err error) bool {
	for _, p := range []string{"MOVED", "ASK", "CLUSTERDOWN", "TRYAGAIN"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// Delete removes the session when it is still at version base.
func (s *Store) Delete(ctx context.Context, session string, base uint64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: delete %q: %w", session, err)
	}
	r, err := deleteScript.Run(ctx, s.c, s.keys(session), strconv.FormatUint(base, 10)).Int64()
	if err != nil {
		return fmt.Errorf("redisstore: delete %q at version %d from %s: %w", session, base, s.where, err)
	}
	if r < 0 {
		return store.ErrConflict
	}
	return nil
}

// nonNil returns b, or an empty slice for nil: go-redis sends a nil []byte
// as an empty string anyway, but says so here rather than relying on it.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
