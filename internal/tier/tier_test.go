package tier

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestEndToEnd: under -short the test is skipped with a message naming its tier; without
// -short it runs. Each case runs this test binary again, with and without -test.short.
func TestEndToEnd(t *testing.T) {
	if os.Getenv("TIER_CHILD") != "" {
		EndToEnd(t)
		t.Log("ran")
		return
	}
	for _, tc := range []struct {
		short bool
		want  string
	}{
		{true, "end-to-end: skipped under -short"},
		{false, "ran"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestEndToEnd$", "-test.v", "-test.count", "1", "-test.short="+strconv.FormatBool(tc.short))
		cmd.Env = append(os.Environ(), "TIER_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("-short=%v: %v\n%s", tc.short, err, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("-short=%v: the child wrote\n%s\nwant %q", tc.short, out, tc.want)
		}
	}
}
