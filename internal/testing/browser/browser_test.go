package browser

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowser runs a page through the real browser: its script runs, its console and
// dialogs are recorded, and a screenshot is a PNG.
func TestBrowser(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!doctype html><title>t</title><h1 id="h">static</h1>
<script>document.getElementById("h").textContent = "scripted"; console.log("hello from the page"); alert("boom")</script>`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := Start(t)
	path := filepath.Join(t.TempDir(), "page.png")
	if err := Screenshot(ctx, srv.URL, "#h", path); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n")) {
		t.Errorf("screenshot %s is not a PNG: starts with %q", path, png[:min(8, len(png))])
	}
	if text, err := WaitText(ctx, "#h", "scripted", 5*time.Second); err != nil {
		t.Errorf("the page's script did not run: %v (text %q)", err, text)
	}
	if got := Dialogs(ctx); !slices.Equal(got, []string{"alert: boom"}) {
		t.Errorf("Dialogs() = %q, want the page's alert", got)
	}
	if got := Console(ctx); !slices.Contains(got, `console.log: "hello from the page"`) {
		t.Errorf("Console() = %q, want the page's console.log", got)
	}
	n, err := Count(ctx, "h1")
	if err != nil || n != 1 {
		t.Errorf("Count(h1) = %d, %v; want 1", n, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Errorf("navigating again after the dialog: %v", err)
	}
}
