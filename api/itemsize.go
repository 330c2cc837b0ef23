package api

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// ItemSize returns the size DynamoDB bills and limits for item, in bytes: attribute names plus
// values, with the per-type overheads of the DynamoDB developer guide ("Item sizes and formats").
func ItemSize(item Item) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		return sumSizes(v.Value, func(s string) int { return len(s) })
	case *types.AttributeValueMemberNS:
		return sumSizes(v.Value, numberSize)
	case *types.AttributeValueMemberBS:
		return sumSizes(v.Value, func(b []byte) int { return len(b) })
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// sumSizes adds the sizes of a set's members.
func sumSizes[E any](set []E, size func(E) int) int {
	n := 0
	for _, e := range set {
		n += size(e)
	}
	return n
}

// numberSize: about one byte per two significant digits, plus one.
func numberSize(s string) int {
	digits := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			digits++
		}
	}
	return (digits+1)/2 + 1
}
