package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exampleNotebook is the notebook of examples/notebooks that TestNotebook runs inside
// a notebook, as a user would after uploading it.
const exampleNotebook = "../../examples/notebooks/mnist.ipynb"

// executeSucceeded matches what the cell that runs jupyter execute prints when it
// ends with 0.
var executeSucceeded = regexp.MustCompile(`(?m)^exit 0$`)

// lossByEpoch matches what the example notebook's last cell prints.
var lossByEpoch = regexp.MustCompile(`loss by epoch: \[([^\]]*)\]`)

// testExampleNotebook uploads examples/notebooks/mnist.ipynb into the notebook through
// JupyterLab's contents API and executes it there with jupyter execute (nbclient), from
// a cell of the notebook's kernel: the SDK runs in-cluster, as the notebook's account.
// It checks what the reader of the executed notebook sees: every cell ran, the loss of
// each epoch is lower than the one before, and the plot is an image.
func testExampleNotebook(ctx context.Context, t *testing.T, c *jobsCluster, jupyter *jupyterClient, kernel string) {
	nb, err := os.ReadFile(exampleNotebook)
	if err != nil {
		t.Fatal(err)
	}
	jupyter.putNotebook(ctx, t, "mnist.ipynb", nb)

	// jupyter execute's --timeout bounds each cell; the cell's own bound ends it before
	// the kernel's reply is given up on.
	start := time.Now()
	out := jupyter.execute(ctx, t, kernel, `import subprocess
r = subprocess.run(["jupyter", "execute", "--timeout=240", "--output=mnist-executed", "mnist.ipynb"],
                   capture_output=True, text=True, timeout=280)
print("exit", r.returncode)
print(r.stderr[-6000:])`)
	took := time.Since(start)
	if !executeSucceeded.MatchString(out) {
		c.fail(t, "jupyter execute mnist.ipynb in the notebook, after %.1f s:\n%s", took.Seconds(), out)
	}
	t.Logf("jupyter execute mnist.ipynb in the notebook: exit 0 in %.1f s", took.Seconds())

	executed := jupyter.getNotebook(ctx, t, "mnist-executed.ipynb")
	text, images := notebookOutputs(executed)
	m := lossByEpoch.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the executed notebook prints no loss by epoch; its output:\n%s", text)
	}
	losses, err := parseFloats(m[1])
	if err != nil || len(losses) < 2 {
		t.Fatalf("loss by epoch: [%s]: want two numbers or more (%v)", m[1], err)
	}
	for i := 1; i < len(losses); i++ {
		if losses[i] >= losses[i-1] {
			t.Errorf("loss by epoch %v: epoch %d's is not lower than epoch %d's", losses, i+1, i)
		}
	}
	if images == 0 {
		t.Errorf("the executed notebook has no image/png output: the loss was not plotted; its output:\n%s", text)
	}
	t.Logf("the executed notebook: loss by epoch %v, %d image(s)", losses, images)
}

// notebookCell is what the test reads of a cell of an executed notebook.
type notebookCell struct {
	CellType string `json:"cell_type"`
	Outputs  []struct {
		OutputType string          `json:"output_type"`
		Text       json.RawMessage `json:"text"` // a string or a list of lines
		Data       map[string]any  `json:"data"`
		Ename      string          `json:"ename"`
		Evalue     string          `json:"evalue"`
	} `json:"outputs"`
}

// notebookOutputs returns the text the code cells printed (streams and errors), and
// how many of their outputs are PNG images.
func notebookOutputs(cells []notebookCell) (string, int) {
	var text strings.Builder
	images := 0
	for _, cell := range cells {
		for _, o := range cell.Outputs {
			switch o.OutputType {
			case "stream":
				text.WriteString(multiline(o.Text))
			case "error":
				text.WriteString(o.Ename + ": " + o.Evalue + "\n")
			}
			if _, ok := o.Data["image/png"]; ok {
				images++
			}
		}
	}
	return text.String(), images
}

// multiline reads nbformat's multiline string: a string, or a list of lines.
func multiline(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var lines []string
	_ = json.Unmarshal(raw, &lines)
	return strings.Join(lines, "")
}

// parseFloats reads "1.5, 0.75" as numbers.
func parseFloats(list string) ([]float64, error) {
	var out []float64
	for f := range strings.SplitSeq(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// putNotebook saves the notebook nb (nbformat JSON) at path through the contents API,
// as JupyterLab's upload does.
func (j *jupyterClient) putNotebook(ctx context.Context, t *testing.T, path string, nb []byte) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"type": "notebook", "format": "json", "content": json.RawMessage(nb)})
	if err != nil {
		t.Fatal(err)
	}
	resp := j.do(ctx, t, http.MethodPut, "/api/contents/"+path, body)
	if resp.code != http.StatusCreated && resp.code != http.StatusOK {
		t.Fatalf("PUT /api/contents/%s: %d: %s", path, resp.code, resp.body)
	}
}

// getNotebook reads the cells of the notebook at path through the contents API.
func (j *jupyterClient) getNotebook(ctx context.Context, t *testing.T, path string) []notebookCell {
	t.Helper()
	resp := j.do(ctx, t, http.MethodGet, "/api/contents/"+path+"?content=1", nil)
	var model struct {
		Content struct {
			Cells []notebookCell `json:"cells"`
		} `json:"content"`
	}
	if resp.code != http.StatusOK || json.Unmarshal(resp.body, &model) != nil {
		t.Fatalf("GET /api/contents/%s: %d: %.2000s", path, resp.code, resp.body)
	}
	return model.Content.Cells
}

// jupyterResponse is the status and body of a request to JupyterLab.
type jupyterResponse struct {
	code int
	body []byte
}

// do sends a request with the token and a JSON body, if any.
func (j *jupyterClient) do(ctx context.Context, t *testing.T, method, path string, body []byte) jupyterResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, j.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+j.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return jupyterResponse{code: resp.StatusCode, body: data}
}
