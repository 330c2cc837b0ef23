package reconcile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Secret values never reach a status table: status tables are read by another account. A
// ReadDesire of a Secret mirrors it with its values redacted, and an apiserver error about a
// Secret an ApplyDesire carries, which may quote an offending value, is scrubbed of the
// manifest's values before it becomes a condition message. A redacted value is the contract's
// api.RedactedValue, which a backend and desirectl recognise.

// SecretRedaction says which Secret data keys a ReadDesire may copy into the status.
type SecretRedaction struct {
	// AllowKeys are data keys copied as they are.
	AllowKeys []string
	// Disabled copies every value (explicit opt-out).
	Disabled bool
}

// redact replaces the values of a Secret's data and stringData (all but the allowed keys,
// unless disabled) and drops the last-applied annotation, which would reveal them again.
func (r SecretRedaction) redact(u *unstructured.Unstructured) {
	if r.Disabled {
		return
	}
	for _, field := range []string{"data", "stringData"} {
		v, present := u.Object[field]
		data, ok := v.(map[string]any)
		if !ok {
			if present && v != nil {
				u.Object[field] = api.RedactedValue // not a map: nothing in it is a name to keep
			}
			continue
		}
		for k := range data {
			if !slices.Contains(r.AllowKeys, k) {
				data[k] = api.RedactedValue
			}
		}
	}
	anns := u.GetAnnotations()
	delete(anns, "kubectl.kubernetes.io/last-applied-configuration")
	u.SetAnnotations(anns)
}

// isSecret reports whether obj is a core Secret.
func isSecret(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// secretScrubber removes a Secret manifest's values from messages, as a class: every value
// of data and stringData at any depth (strings, numbers, booleans, the keys and elements of
// nested maps and lists; a data string also base64-decoded, a string also base64-encoded as
// stringData becomes data), each in every rendering an error may give it: as written,
// Go-quoted (%q, %#v), JSON-escaped, and escaped twice (JSON inside a JSON or Go string).
// Values of four bytes or more are removed wherever they appear; shorter ones where they
// stand as a word of their own, so a message stays readable without revealing them. A
// structured-merge-diff rendering of a value (`valueUnstructured{Value:…}`) is removed
// whole, whatever it holds.
type secretScrubber struct{ values []string }

func newSecretScrubber(obj *unstructured.Unstructured) secretScrubber {
	seen := map[string]bool{}
	var vals []string
	add := func(s string) {
		for _, r := range renderings(s) {
			if r != "" && !seen[r] {
				seen[r] = true
				vals = append(vals, r)
			}
		}
	}
	for _, field := range []string{"data", "stringData"} {
		v, ok := obj.Object[field]
		if !ok {
			continue
		}
		if m, ok := v.(map[string]any); ok {
			// The top-level keys are names the message needs; their values are not.
			for _, e := range m {
				collectSecretValues(e, field == "data", add)
			}
			continue
		}
		collectSecretValues(v, field == "data", add)
	}
	// Longest first: a value that contains another is removed whole.
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	return secretScrubber{values: vals}
}

// collectSecretValues passes every leaf of v (and the keys of nested maps, part of the value)
// to add; numbers in each of their usual spellings. b64: a string is also passed decoded.
func collectSecretValues(v any, b64 bool, add func(string)) {
	switch x := v.(type) {
	case nil:
	case string:
		add(x)
		if len(x) >= 3 {
			// stringData becomes data: an error about the latter quotes it base64-encoded.
			add(base64.StdEncoding.EncodeToString([]byte(x)))
		}
		if b64 {
			if dec, err := base64.StdEncoding.DecodeString(x); err == nil {
				collectSecretValues(string(dec), false, add)
			}
		}
		// JSON text in a value (a .dockerconfigjson): an error may quote one of its leaves.
		if t := strings.TrimSpace(x); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			var inner any
			if json.Unmarshal([]byte(t), &inner) == nil {
				collectSecretValues(inner, false, add)
			}
		}
	case map[string]any:
		for k, e := range x {
			add(k)
			collectSecretValues(e, b64, add)
		}
	case []any:
		for _, e := range x {
			collectSecretValues(e, b64, add)
		}
	case bool:
		add(strconv.FormatBool(x))
	case int64:
		add(strconv.FormatInt(x, 10))
	case int:
		add(strconv.Itoa(x))
	case float64:
		for _, f := range []byte{'g', 'f', 'e', 'G', 'E'} {
			add(strconv.FormatFloat(x, f, -1, 64))
		}
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			add(strconv.FormatInt(int64(x), 10))
		}
	case json.Number:
		add(x.String())
	default:
		add(fmt.Sprint(x))
		add(fmt.Sprintf("%#v", x))
	}
}

// renderings returns s as it may appear in a message: as written, escaped once and twice by
// Go and JSON quoting (without the surrounding quotes).
func renderings(s string) []string {
	once := []string{s, goQuoted(s), asciiQuoted(s), jsonQuoted(s, true), jsonQuoted(s, false)}
	out := slices.Clone(once)
	for _, r := range once[1:] {
		out = append(out, goQuoted(r), jsonQuoted(r, true), jsonQuoted(r, false))
	}
	return out
}

func goQuoted(s string) string    { q := strconv.Quote(s); return q[1 : len(q)-1] }
func asciiQuoted(s string) string { q := strconv.QuoteToASCII(s); return q[1 : len(q)-1] }

func jsonQuoted(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if enc.Encode(s) != nil {
		return s
	}
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

// smdValue finds structured-merge-diff's rendering of a value in an error.
var smdValue = regexp.MustCompile(`valueUnstructured\{Value:`)

// scrub returns msg without the Secret's values.
func (s secretScrubber) scrub(msg string) string {
	msg = scrubValueRenderings(msg)
	for _, v := range s.values {
		switch {
		case v == "":
		case len(v) >= 4:
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		default:
			msg = regexp.MustCompile(`(^|[^A-Za-z0-9+/=])`+regexp.QuoteMeta(v)+`($|[^A-Za-z0-9+/=])`).ReplaceAllString(msg, "${1}[redacted]${2}")
		}
	}
	return msg
}

// scrubValueRenderings removes what each valueUnstructured{Value:…} holds, up to its
// matching brace (the rest of the message when it has none).
func scrubValueRenderings(msg string) string {
	var b strings.Builder
	for {
		loc := smdValue.FindStringIndex(msg)
		if loc == nil {
			b.WriteString(msg)
			return b.String()
		}
		b.WriteString(msg[:loc[1]])
		b.WriteString("[redacted]")
		depth, end := 1, len(msg)
		for i := loc[1]; i < len(msg); i++ {
			switch msg[i] {
			case '{':
				depth++
			case '}':
				depth--
			}
			if depth == 0 {
				end = i
				break
			}
		}
		msg = msg[end:]
	}
}

// scrubVerdict returns v without the values of the Secret that ApplyDesire ad carries. The
// controller applies it to every ApplyDesire verdict, the default reconciler's and a
// wrapper's alike.
func scrubVerdict(ad *api.ApplyDesire, v controller.Verdict) controller.Verdict {
	if ad.Spec.KubeContent == nil || v.Message() == "" {
		return v
	}
	if raw := ad.Spec.KubeContent; !bytes.Contains(raw, []byte("Secret")) && !bytes.Contains(raw, []byte(`\u`)) {
		return v // cheap: not a Secret (nor a kind spelled with escapes)
	}
	obj, err := ParseKubeContent(ad.Spec.KubeContent)
	if err == nil {
		if !isSecret(obj) {
			return v
		}
		return controller.WithMessage(v, newSecretScrubber(obj).scrub(v.Message()))
	}
	// Undecodable: the message (the decoder's own, or a wrapper's) may quote a value the
	// decode choked on, so the values are read from the raw bytes instead.
	raw := scanRawContent(ad.Spec.KubeContent)
	switch {
	case raw.err != nil:
		// Broken JSON: what follows the break is unknown (a kind "Secret" may come later),
		// so nothing of the content is quoted.
		return controller.WithMessage(v, withheldMessage(raw.err))
	case !raw.secret():
		return v
	}
	return controller.WithMessage(v, raw.scrubber().scrub(v.Message()))
}

// rawContent is what a tolerant scan of a kubeContent's bytes finds: its top-level apiVersion
// and kind (the last of repeated keys, as the decoders keep) and every leaf under data and
// stringData, numbers kept as written (no float64 to overflow).
type rawContent struct {
	apiVersion, kind string
	// data and stringData are the leaves (and nested keys) of every data and stringData
	// value seen.
	data, stringData []any
	// err is the syntax error the scan stopped at (a truncated or broken content, or
	// anything after its first value); nil when the whole content was read.
	err error
}

// secret reports whether the content's head names a core Secret: kind Secret of the core
// group, or of an apiVersion that does not parse (it may be meant as one).
func (c rawContent) secret() bool {
	if c.kind != "Secret" {
		return false
	}
	gv, err := schema.ParseGroupVersion(c.apiVersion)
	return err != nil || gv.Group == ""
}

// scrubber is the secretScrubber of the values the scan found.
func (c rawContent) scrubber() secretScrubber {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	if len(c.data) > 0 {
		obj.Object["data"] = c.data
	}
	if len(c.stringData) > 0 {
		obj.Object["stringData"] = c.stringData
	}
	return newSecretScrubber(obj)
}

// errTrailingContent: a kubeContent holds more than one JSON value.
var errTrailingContent = errors.New("scanning kubeContent: content after its first value")

// withheldMessage replaces the message of a content that is not valid JSON and may be a
// Secret: it says where the JSON breaks, and quotes nothing of the content.
func withheldMessage(err error) string {
	where := "it ends before its value does"
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		where = fmt.Sprintf("a syntax error at byte %d", se.Offset)
	} else if errors.Is(err, errTrailingContent) {
		where = "more follows its first value"
	}
	return "kubeContent is not valid JSON (" + where + "); the message is withheld, since the content may be a Secret whose values it would quote"
}

// scanRawContent reads raw token by token, keeping what it can until the first syntax error.
// The leaves of data and stringData are collected as the object scrubber reads them: the
// top-level keys of a map value are names and left out, nested keys are part of a value.
func scanRawContent(raw []byte) rawContent {
	var c rawContent
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		object, wantKey bool
		key             string
	}
	var (
		stack []*frame
		// capture is the depth at which a data or stringData value began (-1: none); into
		// collects its leaves.
		capture = -1
		into    *[]any
		values  int // top-level values read
	)
	// value marks the end of a value at the current depth.
	value := func() {
		if len(stack) == 0 {
			values++
			return
		}
		if top := stack[len(stack)-1]; top.object {
			top.wantKey = true
		}
		if len(stack) == capture {
			capture, into = -1, nil
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF && len(stack) == 0 {
			return c
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			c.err = fmt.Errorf("scanning kubeContent: %w", err)
			return c
		}
		if values > 0 && len(stack) == 0 {
			c.err = errTrailingContent
			return c
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				value()
				continue
			}
			key, _ := tok.(string)
			top.key, top.wantKey = key, false
			if into != nil && len(stack) > capture+1 {
				*into = append(*into, key)
			}
			continue
		}
		if len(stack) == 1 && top.object && capture < 0 {
			switch top.key {
			case "data":
				capture, into = 1, &c.data
			case "stringData":
				capture, into = 1, &c.stringData
			}
		}
		switch x := tok.(type) {
		case json.Delim:
			switch x {
			case '{', '[':
				stack = append(stack, &frame{object: x == '{', wantKey: x == '{'})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
			continue
		case string:
			if len(stack) == 1 && top.object {
				switch top.key {
				case "apiVersion":
					c.apiVersion = x
				case "kind":
					c.kind = x
				}
			}
		}
		if into != nil {
			*into = append(*into, tok)
		}
		value()
	}
}
