package outbox_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/sqlite"
	"github.com/cobranca/cobranca/internal/tier"
)

// The child process of TestCrash: these variables tell it what to open and where to stop.
const (
	crashChild    = "COBRANCA_TEST_OUTBOX_CHILD" // "claimed" or "sent": where the worker stops
	crashDatabase = "COBRANCA_TEST_OUTBOX_DATABASE"
	crashSMTP     = "COBRANCA_TEST_OUTBOX_SMTP"
)

// rescueAfter is how long a claimed job runs before River counts it as lost, in the crash
// tests (in production, River's default: an hour).
const rescueAfter = 2 * time.Second

func openDB(t *testing.T, where string) store.DB {
	t.Helper()
	ctx := context.Background()
	var db store.DB
	var err error
	if strings.HasPrefix(where, "postgres") {
		db, err = postgres.Open(ctx, where, nil)
	} else {
		db, err = sqlite.Open(ctx, where, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func crashConfig(sender outbox.Sender, own outbox.Owner) outbox.Config {
	return outbox.Config{Sender: sender, From: "cobranca@cobranca.test", Owner: own, PollInterval: 50 * time.Millisecond, RescueAfter: rescueAfter}
}

// runCrashChild is the worker TestCrash kills: it stops for good, once it has said so on its
// standard output, where COBRANCA_TEST_OUTBOX_CHILD says.
func runCrashChild(t *testing.T) {
	db := openDB(t, os.Getenv(crashDatabase))
	sender, err := outbox.NewSMTP(os.Getenv(crashSMTP), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := crashConfig(sender, &owner{})
	stop := func(id outbox.ID) {
		fmt.Printf("%s %d\n", os.Getenv(crashChild), id)
		select {} // until SIGKILL
	}
	switch os.Getenv(crashChild) {
	case "claimed":
		outbox.SetHooks(&cfg, stop, nil)
	case "sent":
		outbox.SetHooks(&cfg, nil, stop)
	default:
		t.Fatalf("%s=%q", crashChild, os.Getenv(crashChild))
	}
	cfg.Driver = outboxtest.Driver(t, db)
	o, err := outbox.New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCrash kills the delivery worker (SIGKILL, in a process of its own) after it claimed an
// entry and before it sent it, and after the SMTP server accepted the message and before the
// worker recorded it; then a worker starts again. Nothing is lost, and a message received
// twice carries the same Message-ID both times.
func TestCrash(t *testing.T) {
	if os.Getenv(crashChild) != "" {
		runCrashChild(t)
		return
	}
	tier.EndToEnd(t)
	for _, dialect := range []string{"sqlite", "postgres"} {
		for _, where := range []string{"claimed", "sent"} {
			t.Run(dialect+"/"+where, func(t *testing.T) {
				t.Parallel()
				var url string
				if dialect == "sqlite" {
					url = filepath.Join(t.TempDir(), sqlite.FileName)
				} else {
					url = pg.Database(t)
				}
				db := openDB(t, url)
				if _, err := db.Migrate(context.Background()); err != nil {
					t.Fatal(err)
				}
				s := smtptest.New(t)
				// The entry is committed before any worker runs.
				cfg := crashConfig(smtpSender(t, s), nil)
				cfg.Driver = outboxtest.Driver(t, db)
				o, err := outbox.New(db, cfg)
				if err != nil {
					t.Fatal(err)
				}
				id, err := enqueue(t, db, o, msg, nil)
				if err != nil {
					t.Fatal(err)
				}
				wantID := id.MessageID

				cmd := exec.Command(os.Args[0], "-test.run", "^TestCrash$", "-test.count", "1")
				cmd.Env = append(os.Environ(), crashChild+"="+where, crashDatabase+"="+url, crashSMTP+"="+s.URL())
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				cmd.Stderr = os.Stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				line := make(chan string, 1)
				go func() {
					sc := bufio.NewScanner(out)
					for sc.Scan() {
						if strings.HasPrefix(sc.Text(), where+" ") {
							line <- sc.Text()
							return
						}
					}
					close(line)
				}()
				select {
				case l, ok := <-line:
					if want := fmt.Sprintf("%s %d", where, id.ID); !ok || l != want {
						t.Fatalf("the child said %q, want %q", l, want)
					}
				case <-time.After(30 * time.Second):
					cmd.Process.Kill()
					t.Fatal("the child never reached the point to stop at")
				}
				// The attempt is recorded before the send: the entry is running, attempt 1.
				var state string
				var attempt int64
				if err := db.QueryRow(context.Background(), `SELECT state, attempt FROM river_job WHERE id = $1`, int64(id.ID)).Scan(&state, &attempt); err != nil {
					t.Fatal(err)
				}
				if state != "running" || attempt != 1 {
					t.Errorf("while the worker is stopped %s, the entry is %s, attempt %d; want running, attempt 1", where, state, attempt)
				}
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				_ = cmd.Wait()
				before := len(s.Messages())
				if want := map[string]int{"claimed": 0, "sent": 1}[where]; before != want {
					t.Fatalf("at the kill, the server had %d messages, want %d", before, want)
				}

				// A worker starts again (another replica, or the same after a restart): River
				// rescues the entry once rescueAfter has passed and the new worker leads.
				own := &owner{}
				run(t, db, crashConfig(smtpSender(t, s), own))
				deadline := time.Now().Add(45 * time.Second)
				for {
					var st string
					if err := db.QueryRow(context.Background(), `SELECT state FROM river_job WHERE id = $1`, int64(id.ID)).Scan(&st); err != nil {
						t.Fatal(err)
					}
					if st == "completed" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the entry is still %s after the restart", st)
					}
					time.Sleep(100 * time.Millisecond)
				}
				got := s.Messages()
				if len(got) == 0 {
					t.Fatal("the message was lost")
				}
				// Killed before the send: sent once, after the restart. Killed after it: sent
				// again (at least once), under the same Message-ID.
				if want := map[string]int{"claimed": 1, "sent": 2}[where]; len(got) != want {
					t.Errorf("received %d messages, want %d", len(got), want)
				}
				for _, m := range got {
					if m.MessageID != wantID || len(m.To) != 1 || m.To[0] != msg.To {
						t.Errorf("received %+v, want every copy to %s with Message-ID %s", m, msg.To, wantID)
					}
				}
				// The delivery is recorded in the transaction that completes the entry: the killed
				// worker, stopped before it, completed nothing (the entry was rescued), and the
				// one that completed it told its owner once, while the entry was still running.
				if got, want := own.deliveries(), []string{fmt.Sprintf("%d %s running", id.ID, msg.Ref)}; !slices.Equal(got, want) {
					t.Errorf("deliveries recorded = %q, want %q", got, want)
				}
			})
		}
	}
}
