package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cobranca/cobranca/internal/pgtest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

func TestDatabasesAreSeparate(t *testing.T) {
	ctx := context.Background()
	a, b := pg.Database(t), pg.Database(t)
	if a == b {
		t.Fatalf("Database() returned %q twice", a)
	}
	connA, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer connA.Close(ctx)
	if _, err := connA.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	connB, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer connB.Close(ctx)
	var n int
	if err := connB.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("table created in database A is visible in database B")
	}
}

// TestStopStart: a cluster of the test's own can be stopped, refusing connections, and
// started again with its data.
func TestStopStart(t *testing.T) {
	ctx := context.Background()
	own := pgtest.New()
	t.Cleanup(own.Close)
	url := own.Database(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (x int)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	own.Stop(t)
	if conn, err := pgx.Connect(ctx, url); err == nil {
		conn.Close(ctx)
		t.Fatal("Connect() to a stopped cluster succeeded")
	}
	own.Start(t)
	conn, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("Connect() after Start: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "INSERT INTO kept VALUES (1)"); err != nil {
		t.Errorf("the table made before Stop: %v", err)
	}
}
