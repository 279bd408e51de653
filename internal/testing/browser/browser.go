// Package browser drives a real headless Chromium (Debian's chromium package, at
// /usr/bin/chromium) from go test through the DevTools protocol (chromedp), so that
// tfk8s's web pages are tested the way a user sees them: scripts run, the
// Content-Security-Policy is enforced, and a dialog an injected script opens is noticed.
//
// Start gives a test its own browser, stopped (process gone) when the test ends; on
// failure the page's text and the console are logged, so that a failed assertion
// shows what the user would have seen.
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ExecPath is where Debian's chromium package installs the browser.
const ExecPath = "/usr/bin/chromium"

// Package is the Debian package that provides ExecPath; make test installs it.
const Package = "chromium"

// startTimeout bounds starting the browser.
const startTimeout = 30 * time.Second

// recorder keeps what the page said outside its DOM: console messages, uncaught
// exceptions, log entries (CSP violations among them) and JavaScript dialogs.
type recorder struct {
	mu      sync.Mutex
	console []string
	dialogs []string
}

func (r *recorder) addConsole(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.console = append(r.console, s)
}

func (r *recorder) addDialog(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dialogs = append(r.dialogs, s)
}

type recorderKey struct{}

// Start launches a headless Chromium with a fresh profile in t.TempDir() and returns
// a context for chromedp actions on its first tab. The browser is closed and its
// process waited for when the test ends. A missing chromium fails the test, naming
// the package to install: a browser test that skips proves nothing.
func Start(t testing.TB) context.Context {
	t.Helper()
	if _, err := os.Stat(ExecPath); err != nil {
		t.Fatalf("starting the browser: %s not found; install Debian's %s package (apt-get install -y %s)", ExecPath, Package, Package)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ExecPath),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(1280, 900),
	)
	rec := &recorder{}
	base := context.WithValue(context.Background(), recorderKey{}, rec)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(base, opts...)
	var ctx context.Context
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf), chromedp.WithListener(func(ev any) { rec.record(ctx, ev) }))
	// The first call starts the browser and binds it to the context it is given, so
	// it runs with ctx itself, bounded by a timer rather than a deadline.
	timer := time.AfterFunc(startTimeout, cancel)
	_, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{})
	timer.Stop()
	if err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("starting %s: %v", ExecPath, err)
	}
	pid := chromedp.FromContext(ctx).Browser.Process().Pid
	t.Cleanup(func() {
		if t.Failed() {
			logPage(t, ctx, rec)
		}
		stop(t, ctx, cancel, cancelAlloc, pid)
	})
	return ctx
}

// stop closes the browser gracefully, then cancels its allocator, which kills what is
// left and waits for the process; it fails the test if the process outlives that.
func stop(t testing.TB, ctx context.Context, cancel, cancelAlloc context.CancelFunc, pid int) {
	_ = chromedp.Cancel(ctx)
	cancel()
	cancelAlloc()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("stopping the browser: process %d still exists after close (kill -0: %v)", pid, err)
	}
}

// record keeps console output, exceptions and log entries, and dismisses every
// JavaScript dialog (keeping its message), since an open dialog blocks the page. It
// runs in the tab's event loop, so it returns at once and sends commands from a
// goroutine.
func (r *recorder) record(ctx context.Context, ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		args := make([]string, 0, len(ev.Args))
		for _, a := range ev.Args {
			args = append(args, remoteString(a))
		}
		r.addConsole(fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
	case *runtime.EventExceptionThrown:
		r.addConsole("exception: " + exceptionText(ev.ExceptionDetails))
	case *cdplog.EventEntryAdded:
		r.addConsole(fmt.Sprintf("log %s %s: %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text))
	case *page.EventJavascriptDialogOpening:
		r.addDialog(fmt.Sprintf("%s: %s", ev.Type, ev.Message))
		go func() {
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}()
	}
}

func remoteString(a *runtime.RemoteObject) string {
	if a.Value != nil {
		return string(a.Value)
	}
	return a.Description
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return ""
	}
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}

func recorderFrom(ctx context.Context) *recorder {
	if rec, ok := ctx.Value(recorderKey{}).(*recorder); ok {
		return rec
	}
	return &recorder{}
}

// Console returns what the pages of ctx's browser wrote to the console so far:
// console.* calls, uncaught exceptions and browser log entries (such as a
// Content-Security-Policy violation).
func Console(ctx context.Context) []string {
	rec := recorderFrom(ctx)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.console...)
}

// Dialogs returns the alert, confirm and prompt dialogs pages opened so far, each
// as "type: message"; they were dismissed. A page that renders untrusted text inertly
// opens none.
func Dialogs(ctx context.Context) []string {
	rec := recorderFrom(ctx)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.dialogs...)
}

// logPage logs the current page's address, visible text and the console, for a
// failed test.
func logPage(t testing.TB, ctx context.Context, rec *recorder) {
	t.Helper()
	logCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url, err := chromedp.Run(logCtx, chromedp.Location())
	if err != nil {
		t.Logf("browser: reading the page after the failure: %v", err)
	}
	text, err := chromedp.Run(logCtx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		t.Logf("browser: reading the page's text after the failure: %v", err)
	}
	t.Logf("browser: page %s says:\n%s", url, text)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	t.Logf("browser: console:\n%s", strings.Join(rec.console, "\n"))
	if len(rec.dialogs) > 0 {
		t.Logf("browser: dialogs: %q", rec.dialogs)
	}
}

// Screenshot opens url, waits until waitSelector (CSS) is visible and writes a PNG of
// the whole page to path.
func Screenshot(ctx context.Context, url, waitSelector, path string) error {
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(waitSelector))); err != nil {
		return fmt.Errorf("opening %s for a screenshot: %w", url, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return fmt.Errorf("taking a screenshot of %s: %w", url, err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("writing screenshot %s: %w", path, err)
	}
	return nil
}

// Open navigates to url and waits until selector (CSS) is visible.
func Open(ctx context.Context, url, selector string) error {
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(selector))); err != nil {
		return fmt.Errorf("opening %s and waiting for %q: %w", url, selector, err)
	}
	return nil
}

// Submit clicks selector, a button that submits a form, and waits, at most 30 s, until
// the page the form leads to has loaded. A test that went on at once could begin
// another navigation while the browser still follows the form's redirect, and the
// browser would abort one of them.
func Submit(ctx context.Context, selector string) error {
	const marker = "__tfk8sSubmitted"
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("window."+marker+" = true")); err != nil {
		return fmt.Errorf("submitting with %q: %w", selector, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(selector)); err != nil {
		return fmt.Errorf("submitting with %q: %w", selector, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Errors are the navigation's: the page being read is going away.
		loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.`+marker+` === undefined && document.readyState === "complete"`))
		if err == nil && loaded {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("submitting with %q: the next page did not load within 30s (last error: %v)", selector, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Text returns the visible text of the first node matching selector (CSS) on the
// current page, or "" if none does.
func Text(ctx context.Context, selector string) (string, error) {
	return firstProperty(ctx, selector, "innerText")
}

// firstProperty returns a string property of the first node matching selector, or
// "" if none does.
func firstProperty(ctx context.Context, selector, property string) (string, error) {
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		fmt.Sprintf(`(document.querySelector(%q) || {%s: ""}).%s`, selector, property, property)))
	if err != nil {
		return "", fmt.Errorf("reading the %s of %q: %w", property, selector, err)
	}
	return v, nil
}

// WaitText polls selector's text on the current page until it contains want, for at
// most timeout, and returns the last text read. Pages that update themselves (htmx
// polling, server-sent events) are checked this way.
func WaitText(ctx context.Context, selector, want string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		text, err := Text(ctx, selector)
		if err == nil && strings.Contains(text, want) {
			return text, nil
		}
		if time.Now().After(deadline) {
			return text, fmt.Errorf("waiting for %q in %q: not there after %s (last error %v)", want, selector, timeout, err)
		}
		select {
		case <-ctx.Done():
			return text, fmt.Errorf("waiting for %q in %q: %w", want, selector, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// HTML returns the outer HTML of the first node matching selector (CSS) on the
// current page, or "" if none does.
func HTML(ctx context.Context, selector string) (string, error) {
	return firstProperty(ctx, selector, "outerHTML")
}

// Count returns how many nodes match selector (CSS) on the current page, waiting for
// none.
func Count(ctx context.Context, selector string) (int, error) {
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, selector)))
	if err != nil {
		return 0, fmt.Errorf("counting %q: %w", selector, err)
	}
	return n, nil
}

// Points are the points of a page's charts, by chart (its scalar) and line (its
// label): [step, value] where the line has a value.
type Points map[string]map[string][][2]float64

// Plotted reads back the points of the dashboard's charts on the current page
// (figure.curve under #curves, each holding its uPlot chart as .plot) as uPlot holds
// them, so that a test checks what is drawn, not what was sent.
func Plotted(ctx context.Context) (Points, error) {
	return PlottedIn(ctx, "#curves")
}

// PlottedIn is Plotted of the charts under the element of the CSS selector in, such
// as the job page's usage curves, #usage-curves.
func PlottedIn(ctx context.Context, in string) (Points, error) {
	type chart struct {
		Scalar string
		Lines  []string
		Data   [][]*float64
	}
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]chart](`[...document.querySelectorAll(`+strconv.Quote(in+" figure.curve")+`)].map(f => ({
		scalar: f.dataset.scalar, lines: f.plot.series.slice(1).map(s => s.label), data: f.plot.data}))`))
	if err != nil {
		return nil, fmt.Errorf("reading the charts: %w", err)
	}
	got := Points{}
	for _, c := range charts {
		got[c.Scalar] = map[string][][2]float64{}
		for i, line := range c.Lines {
			for j, v := range c.Data[i+1] {
				if v != nil {
					got[c.Scalar][line] = append(got[c.Scalar][line], [2]float64{*c.Data[0][j], *v})
				}
			}
		}
	}
	return got, nil
}
