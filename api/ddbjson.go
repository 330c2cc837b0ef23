package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemFromJSON parses one item in DynamoDB JSON, the form the AWS CLI prints and accepts
// (`aws dynamodb get-item` prints {"Item": {...}}: pass the inner object), e.g.
// {"documentID": {"S": "…"}, "version": {"N": "1"}}. Types S, N, B (base64), BOOL, NULL, SS,
// NS, BS, L and M. Errors wrap ErrInvalidItem.
func ItemFromJSON(data []byte) (Item, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: DynamoDB JSON: %w", ErrInvalidItem, err)
	}
	item := Item{}
	for k, v := range raw {
		av, err := valueFromJSON(v)
		if err != nil {
			return nil, fmt.Errorf("%w: attribute %q: %w", ErrInvalidItem, k, err)
		}
		item[k] = av
	}
	return item, nil
}

func valueFromJSON(data json.RawMessage) (types.AttributeValue, error) {
	var typed map[string]json.RawMessage
	if err := json.Unmarshal(data, &typed); err != nil {
		return nil, err
	}
	if len(typed) != 1 {
		return nil, fmt.Errorf("want one type key, got %d", len(typed))
	}
	for t, v := range typed {
		switch t {
		case "S":
			var s string
			err := json.Unmarshal(v, &s)
			return &types.AttributeValueMemberS{Value: s}, err
		case "N":
			var s string
			err := json.Unmarshal(v, &s)
			return &types.AttributeValueMemberN{Value: s}, err
		case "B":
			var b []byte // base64, as encoding/json reads []byte
			err := json.Unmarshal(v, &b)
			return &types.AttributeValueMemberB{Value: b}, err
		case "BOOL":
			var b bool
			err := json.Unmarshal(v, &b)
			return &types.AttributeValueMemberBOOL{Value: b}, err
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}, nil
		case "SS":
			var ss []string
			err := json.Unmarshal(v, &ss)
			return &types.AttributeValueMemberSS{Value: ss}, err
		case "NS":
			var ns []string
			err := json.Unmarshal(v, &ns)
			return &types.AttributeValueMemberNS{Value: ns}, err
		case "BS":
			var bs [][]byte
			err := json.Unmarshal(v, &bs)
			return &types.AttributeValueMemberBS{Value: bs}, err
		case "L":
			var list []json.RawMessage
			if err := json.Unmarshal(v, &list); err != nil {
				return nil, err
			}
			out := &types.AttributeValueMemberL{Value: make([]types.AttributeValue, 0, len(list))}
			for i, e := range list {
				av, err := valueFromJSON(e)
				if err != nil {
					return nil, fmt.Errorf("[%d]: %w", i, err)
				}
				out.Value = append(out.Value, av)
			}
			return out, nil
		case "M":
			m, err := ItemFromJSON(v)
			if err != nil {
				return nil, err
			}
			return &types.AttributeValueMemberM{Value: m}, nil
		default:
			return nil, fmt.Errorf("unknown type %q", t)
		}
	}
	return nil, nil // unreachable: one key
}

// ItemToJSON writes item as DynamoDB JSON (see ItemFromJSON), attributes sorted by name, so
// equal items give equal bytes.
func ItemToJSON(item Item) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeMap(&buf, item); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeMap(buf *bytes.Buffer, m Item) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		if err := writeValue(buf, m[k]); err != nil {
			return fmt.Errorf("attribute %q: %w", k, err)
		}
	}
	buf.WriteByte('}')
	return nil
}

func writeValue(buf *bytes.Buffer, v types.AttributeValue) error {
	typed := func(t string, x any) error {
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		fmt.Fprintf(buf, `{%q:%s}`, t, b)
		return nil
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return typed("S", v.Value)
	case *types.AttributeValueMemberN:
		return typed("N", v.Value)
	case *types.AttributeValueMemberB:
		return typed("B", base64.StdEncoding.EncodeToString(v.Value))
	case *types.AttributeValueMemberBOOL:
		return typed("BOOL", v.Value)
	case *types.AttributeValueMemberNULL:
		return typed("NULL", true)
	case *types.AttributeValueMemberSS:
		return typed("SS", v.Value)
	case *types.AttributeValueMemberNS:
		return typed("NS", v.Value)
	case *types.AttributeValueMemberBS:
		return typed("BS", v.Value)
	case *types.AttributeValueMemberL:
		buf.WriteString(`{"L":[`)
		for i, e := range v.Value {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeValue(buf, e); err != nil {
				return err
			}
		}
		buf.WriteString(`]}`)
		return nil
	case *types.AttributeValueMemberM:
		buf.WriteString(`{"M":`)
		if err := writeMap(buf, v.Value); err != nil {
			return err
		}
		buf.WriteByte('}')
		return nil
	}
	return fmt.Errorf("unsupported attribute value %T", v)
}
