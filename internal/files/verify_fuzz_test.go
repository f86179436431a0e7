package files_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/files"
)

// FuzzVerify: whatever the path's file id and the query, Verify never
// panics, refuses only with link_signature_invalid or link_expired, and
// lets through (or calls expired) only what the keys signed: the URL the
// claim makes carries the very signature given.
func FuzzVerify(f *testing.F) {
	links := newLinks(f)
	good := links.URL(files.Link{ID: "l_" + "abcdefghijklmnopqrstuvwxyz", FileID: "f_" + "234567abcdefghijklmnopqrst", ExpiresAt: t0.Add(time.Hour)})
	u, err := url.Parse(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("f_234567abcdefghijklmnopqrst", u.RawQuery)
	f.Add("f_234567abcdefghijklmnopqrst", u.RawQuery+"&sig=x")
	f.Add("f_234567abcdefghijklmnopqrsu", u.RawQuery)
	f.Add("", "link=&exp=-1&kid=k1&sig=")
	f.Add("f_x", "exp=99999999999999999999")
	f.Fuzz(func(t *testing.T, fileID, rawQuery string) {
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			return
		}
		c, err := links.Verify(fileID, q, t0)
		if err != nil {
			fe, ok := failure.As(err)
			if !ok || fe.Code != files.CodeLinkSignature && fe.Code != files.CodeLinkExpired {
				t.Fatalf("Verify = %v, want link_signature_invalid or link_expired", err)
			}
			if fe.Code == files.CodeLinkSignature {
				return
			}
		}
		signed, err := url.Parse(links.URL(files.Link{ID: c.LinkID, FileID: c.FileID, ExpiresAt: c.Expires}))
		if err != nil {
			t.Fatal(err)
		}
		if c.FileID != fileID || signed.Query().Get("sig") != q.Get("sig") || signed.Query().Get("exp") != q.Get("exp") {
			t.Fatalf("Verify let through a claim %+v the keys did not sign", c)
		}
	})
}
