package nimbus

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/blobstore"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// DefaultListen is where a nimbus binds unless told otherwise: loopback,
// on Storm's nimbus.thrift.port.
const DefaultListen = "127.0.0.1:6627"

// joinTimeout bounds how long Run tries to reach etcd when it starts.
const joinTimeout = 30 * time.Second

// Config is what a nimbus is started with. The zero value of a field
// takes the default its comment gives.
type Config struct {
	// ID names this nimbus among the members; empty means the one kept
	// in Dir, made from the host name and a random suffix on the first
	// start.
	ID string `yaml:"id"`
	// Dir holds the nimbus's local state: its artifacts, under
	// Dir/artifacts. Required.
	Dir string `yaml:"dir"`
	// Listen is the address the API binds, host:port; empty means
	// DefaultListen. Port 0 picks a free port.
	Listen string `yaml:"listen"`
	// Advertise is the address other nimbuses, supervisors and clients
	// reach this one at; empty means the address it listens on, with the
	// host name for a wildcard address (0.0.0.0 or ::).
	Advertise string `yaml:"advertise"`
	// Endpoints are etcd's client URLs. Required.
	Endpoints []string `yaml:"endpoints"`
	// Cluster is the cluster's configuration layer (gale.yaml): the
	// nimbus.* keys, isolation.scheduler.machines (topology name → the
	// machines it gets to itself), and the layer under every submitted
	// topology's config.
	Cluster gale.Config `yaml:"cluster"`
	// RequireAuth requires the bearer token on the mutating calls even
	// when the API binds loopback only, where it is otherwise not asked
	// for.
	RequireAuth bool `yaml:"require_auth"`
	// GaleVersion is reported by ClusterInfo.
	GaleVersion string `yaml:"-"`
	// Logger receives the nimbus's logs; nil discards them.
	Logger *slog.Logger `yaml:"-"`
	// Now is the nimbus's clock: the time the supervisors' reports are
	// filed at, the rolling windows measured by, the submissions stamped
	// with, and the kills' and rebalances' deadlines set and found due by;
	// nil means time.Now. Tests pass a manual clock's.
	Now func() time.Time `yaml:"-"`
}

// Nimbus is one nimbus process's server. Its methods are safe for
// concurrent use.
type Nimbus struct {
	cfg     Config
	id      string
	log     *slog.Logger
	cluster *config.Effective
	blobs   *blobstore.Store
	token   string // "" when calls need no token
	tls     *tls.Config
	monitor time.Duration // nimbus.monitor.freq.secs
	ttl     time.Duration // nimbus.supervisor.timeout.secs: the lease of its membership
	// step is what the leader's Step decides by: the cluster layer,
	// isolation.scheduler.machines and the bounds of one topology.
	step StepConfig

	// windows are the topologies' counters over the rolling windows.
	windows *windows

	ready chan struct{} // closed once the API serves
	ran   chan struct{} // closed when Run starts; Run runs once

	// Set by Run before ready is closed; not changed after.
	addr   string
	store  *coord.Store
	member *coord.Membership

	// synced is poked when the replication loop has stored an artifact
	// or found it has them all; the election loop waits on it.
	synced chan struct{}
	// kick asks the leader's loop to reconcile now.
	kick chan struct{}
	// reconcileMu serializes reconciliations: the leader's loop and the
	// calls that reconcile before they answer.
	reconcileMu sync.Mutex

	mu struct {
		sync.Mutex
		// leader is this nimbus's leadership while it leads, else nil.
		leader *coord.Leadership
		// pending holds the reasons the leader's last schedule left
		// topologies unscheduled, by topology id.
		pending map[string]string
		// reports are the supervisors' latest reports, by supervisor id.
		reports map[string]report
		// uploads counts, by SHA-256, the submissions storing or
		// about to record an artifact, which no clean-up may delete.
		uploads map[string]int
	}
}

// report is a supervisor's latest summary of its workers.
type report struct {
	at      time.Time
	workers []*nimbuspb.WorkerReport
}

// New checks cfg and opens the artifact store. It starts nothing: Run
// does. A Nimbus bound beyond loopback with no bearer token configured
// (nimbus.auth.token or nimbus.auth.token.file) is refused.
func New(cfg Config) (*Nimbus, error) {
	if cfg.Dir == "" {
		return nil, errors.New("nimbus: no directory for its state (--dir)")
	}
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("nimbus: no etcd endpoints (--etcd or gale.etcd.endpoints)")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("nimbus: listen address %q: %w (want host:port, such as %s)", cfg.Listen, err, DefaultListen)
	}
	eff, err := config.Resolve(cfg.Cluster, nil)
	if err != nil {
		return nil, fmt.Errorf("nimbus: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ID == "" {
		if cfg.ID, err = persistentID(cfg.Dir); err != nil {
			return nil, err
		}
	}
	n := &Nimbus{
		cfg:     cfg,
		id:      cfg.ID,
		cluster: eff,
		ready:   make(chan struct{}),
		ran:     make(chan struct{}),
		synced:  make(chan struct{}, 1),
		kick:    make(chan struct{}, 1),
		windows: newWindows(cfg.Now()),
	}
	n.log = cfg.Logger.With("component", "nimbus", "nimbus", n.id)
	n.mu.pending = make(map[string]string)
	n.mu.reports = make(map[string]report)
	n.mu.uploads = make(map[string]int)
	n.monitor = time.Duration(intKey(eff, config.NimbusMonitorFreqSecs)) * time.Second
	n.ttl = time.Duration(intKey(eff, config.NimbusSupervisorTimeoutSecs)) * time.Second
	n.step = StepConfig{Cluster: cfg.Cluster, Isolation: eff.IntMap(config.IsolationSchedulerMachines), Limits: limitsOf(eff)}

	if n.token, err = loadToken(eff); err != nil {
		return nil, err
	}
	if !cfg.RequireAuth && isLoopback(host) {
		n.token = ""
	} else if n.token == "" {
		what := fmt.Sprintf("listens on %s, beyond loopback,", cfg.Listen)
		if isLoopback(host) {
			what = "requires authentication"
		}
		return nil, fmt.Errorf("nimbus: %s but no bearer token is configured: set nimbus.auth.token or nimbus.auth.token.file in gale.yaml, or bind 127.0.0.1", what)
	}
	if n.tls, err = loadTLS(eff); err != nil {
		return nil, err
	}
	limit := int64(intKey(eff, config.NimbusArtifactMaxMB)) << 20
	if n.blobs, err = blobstore.Open(filepath.Join(cfg.Dir, "artifacts"), limit); err != nil {
		return nil, fmt.Errorf("nimbus: %w", err)
	}
	return n, nil
}

// persistentID returns the id kept in dir, making one (the host name and
// a random suffix) the first time, so that a nimbus restarted on its
// directory is the same member.
func persistentID(dir string) (string, error) {
	path := filepath.Join(dir, "id")
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("nimbus: %w", err)
	}
	h, _ := os.Hostname()
	if h == "" {
		h = "nimbus"
	}
	id := h + "-" + randomHex(4)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("nimbus: %w", err)
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("nimbus: %w", err)
	}
	return id, nil
}

// intKey reads an integer key that has a default.
func intKey(e *config.Effective, key string) int {
	v, _ := e.Int(key)
	return v
}

// isLoopback reports whether host (of a listen address) binds loopback
// only: a loopback IP or "localhost". An empty host binds every address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// ID is the nimbus's member id.
func (n *Nimbus) ID() string { return n.id }

// Ready is closed once the API serves; Addr is then valid.
func (n *Nimbus) Ready() <-chan struct{} { return n.ready }

// Addr is the address the API is reached at once Ready is closed, ""
// before.
func (n *Nimbus) Addr() string {
	select {
	case <-n.ready:
		return n.addr
	default:
		return ""
	}
}

// IsLeader reports whether this nimbus leads now.
func (n *Nimbus) IsLeader() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.leader != nil
}

// Run serves until ctx is cancelled, then stops in order: the API stops
// accepting calls and those in progress return (an operation with a wait
// stays recorded for the next leader), the leadership is resigned, the
// membership closed. It returns nil after a cancellation, or the error
// that kept it from starting. Run may be called once.
func (n *Nimbus) Run(ctx context.Context) (err error) {
	select {
	case <-n.ran:
		return errors.New("nimbus: Run called twice")
	default:
		close(n.ran)
	}
	ln, err := net.Listen("tcp", n.cfg.Listen)
	if err != nil {
		return fmt.Errorf("nimbus: listen on %s: %w", n.cfg.Listen, err)
	}
	defer ln.Close()
	n.addr = advertised(n.cfg.Advertise, ln.Addr())
	cli, err := n.dialEtcd() // auth.go
	if err != nil {
		return fmt.Errorf("nimbus: %w", err)
	}
	defer cli.Close()
	n.store = coord.NewStore(cli)
	defer n.store.Close()
	// Fail fast, with the address, when etcd is not there.
	jctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	member, err := n.store.JoinNimbus(jctx, coord.Nimbus{ID: n.id, Addr: n.addr, Started: n.cfg.Now()}, n.ttl)
	if err != nil {
		return fmt.Errorf("nimbus: join the members in etcd at %v (is etcd running there?): %w", n.cfg.Endpoints, err)
	}
	n.member = member
	defer member.Close()
	if err := n.holdStored(jctx); err != nil {
		return err
	}

	// runCtx ends every loop and every call in progress.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	opts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(n.unaryAuth),
		grpc.ChainStreamInterceptor(n.streamAuth),
	}
	if n.tls != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(n.tls)))
	}
	srv := grpc.NewServer(opts...)
	nimbuspb.RegisterNimbusServer(srv, &api{n: n, ctx: runCtx})

	var wg sync.WaitGroup
	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- srv.Serve(ln) })
	wg.Go(func() { n.replicate(runCtx) })
	wg.Go(func() { n.syncTotals(runCtx) }) // totals.go
	wg.Go(func() { n.elect(runCtx) })
	close(n.ready)
	n.log.Info("serving", "addr", n.addr, "tls", n.tls != nil, "auth", n.token != "")

	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = fmt.Errorf("nimbus: serve: %w", err)
	}
	stop()
	srv.Stop() // the calls in progress have seen runCtx end
	wg.Wait()  // the election loop resigns on its way out
	n.log.Info("stopped")
	return err
}

// advertised is the address others reach a nimbus at: the configured
// one, or the bound one, with the host name for a wildcard address
// (0.0.0.0 or ::), which no one can dial.
func advertised(configured string, bound net.Addr) string {
	if configured != "" {
		return configured
	}
	tcp, ok := bound.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return bound.String()
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return bound.String()
	}
	return net.JoinHostPort(h, strconv.Itoa(tcp.Port))
}

// holdStored checks the artifacts on disk from an earlier run, deletes
// those corrupted since, and records the others as held by this nimbus.
func (n *Nimbus) holdStored(ctx context.Context) error {
	keys, err := n.blobs.List()
	if err != nil {
		return fmt.Errorf("nimbus: %w", err)
	}
	for _, k := range keys {
		if err := n.blobs.Verify(k); err != nil {
			n.log.Warn("deleting a corrupted artifact", "sha256", k, "err", err)
			if err := n.blobs.Delete(k); err != nil {
				return fmt.Errorf("nimbus: %w", err)
			}
			continue
		}
		if err := n.member.Hold(ctx, k); err != nil {
			return fmt.Errorf("nimbus: record artifact %s as held: %w", k, err)
		}
	}
	return nil
}

// poke sends on a channel of capacity 1 without blocking.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// upload marks sha as being submitted, so that no clean-up deletes it,
// until done is called.
func (n *Nimbus) upload(sha string) (done func()) {
	n.mu.Lock()
	n.mu.uploads[sha]++
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		if n.mu.uploads[sha]--; n.mu.uploads[sha] <= 0 {
			delete(n.mu.uploads, sha)
		}
		n.mu.Unlock()
	}
}

func (n *Nimbus) uploading(sha string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.uploads[sha] > 0
}

// sleepCtx waits d or until ctx is done; false if ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
