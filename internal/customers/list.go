package customers

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
)

// MaxPage bounds a page of List.
const MaxPage = 500

// ListFilter chooses the customers of a page of List.
type ListFilter struct {
	Status Status // "" every status; else the stored one (a pause that ended is still paused here: InEffect says)
	After  string // the id the previous page ended at (its next); "" from the start
	Limit  int    // 1..MaxPage
}

// List returns a page of the customers f chooses, in id order, with their
// contact status and who set it, why and when, and the id to pass as the
// next page's After ("" at the end). Each page reads the primary key, or
// customer_status, from where the previous one ended.
func List(ctx context.Context, q store.Querier, f ListFilter) (page []Customer, next string, err error) {
	if f.Limit < 1 || f.Limit > MaxPage {
		return nil, "", &failure.Error{Code: failure.InvalidArguments, Field: "limit", Message: "must be from 1 to " + strconv.Itoa(MaxPage)}
	}
	if f.Status != "" && !f.Status.Valid() {
		return nil, "", &failure.Error{Code: failure.InvalidArguments, Field: "status", Message: "must be one of contactable, paused, do_not_contact"}
	}
	sql, args := listSQL(f)
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, "", fmt.Errorf("customers: list: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scan(rows)
		if err != nil {
			return nil, "", fmt.Errorf("customers: list: %w", err)
		}
		page = append(page, c)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("customers: list: %w", err)
	}
	if len(page) > f.Limit {
		page = page[:f.Limit]
		next = page[f.Limit-1].ID
	}
	return page, next, nil
}

// listSQL is List's query of f (checked).
func listSQL(f ListFilter) (string, []any) {
	sql := `SELECT ` + columns + ` FROM customer WHERE id > $1`
	args := []any{f.After, int64(f.Limit + 1)}
	if f.Status != "" {
		sql += ` AND contact_status = $3`
		args = append(args, string(f.Status))
	}
	return sql + ` ORDER BY id LIMIT $2`, args
}
