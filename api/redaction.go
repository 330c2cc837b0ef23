package api

import "encoding/base64"

// RedactedValue is what a ReadDesire status shows in place of each Secret data value the
// applier redacted (its SecretRedaction option): base64 of "REDACTED", so the object stays a
// valid Secret. A value that really is the bytes "REDACTED" cannot be told apart.
var RedactedValue = base64.StdEncoding.EncodeToString([]byte("REDACTED"))
