package remote

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/zeebo/blake3"
)

// MaxPublish bounds what Publish uploads (one PUT).
const MaxPublish = 5 << 30

// Publish uploads data as PREFIX/published/HASH/NAME (HASH: BLAKE3 of
// data, so that republishing the same bytes reuses the object) and
// returns a presigned GET URL valid for expires (at most 7 days, as S3
// allows). name is reduced to its last element.
func Publish(ctx context.Context, c *Client, name string, data []byte, expires time.Duration) (string, error) {
	if expires <= 0 || expires > 7*24*time.Hour {
		return "", fmt.Errorf("publish: expiry %v: want more than 0 and at most 7 days", expires)
	}
	if len(data) > MaxPublish {
		return "", fmt.Errorf("publish: %d bytes: at most %d", len(data), MaxPublish)
	}
	base := path.Base("/" + name)
	if base == "/" || base == "." || strings.ContainsAny(base, "\x00") {
		base = "file"
	}
	h := blake3.Sum256(data)
	key := c.key(fmt.Sprintf("published/%x/%s", h[:16], base))
	if ok, err := c.has(ctx, key); err != nil {
		return "", fmt.Errorf("publish: %w", err)
	} else if !ok {
		if err := c.put(ctx, key, data, ""); err != nil {
			return "", fmt.Errorf("publish: %w", err)
		}
	}
	req, err := c.pre.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &c.loc.Bucket, Key: &key}, s3.WithPresignExpires(expires))
	if err != nil {
		return "", fmt.Errorf("publish: presign: %w", err)
	}
	return req.URL, nil
}
