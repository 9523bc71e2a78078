package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// Webhook is a webhook endpoint (GET /webhooks). Its secret is shown only
// when it is created or rotated.
type Webhook struct {
	ID                      string   `json:"id"`
	URL                     string   `json:"url"`
	EventTypes              []string `json:"event_types"`
	IsActive                bool     `json:"is_active"`
	ConsecutiveFailures     int      `json:"consecutive_failures"`
	DisabledAt              string   `json:"disabled_at,omitempty"`
	PreviousSecretExpiresAt string   `json:"previous_secret_expires_at,omitempty"`
	CreatedAt               string   `json:"created_at"`
	UpdatedAt               string   `json:"updated_at"`
}

// NewWebhook is the body of POST /webhooks.
type NewWebhook struct {
	URL        string   `json:"url"`
	EventTypes []string `json:"event_types"`
	IsActive   *bool    `json:"is_active,omitempty"` // default true
}

// WebhookUpdate is the body of PATCH /webhooks/{id}: nil fields are left
// as they are. ReplaySince, only with IsActive true, queues what the
// endpoint missed since then.
type WebhookUpdate struct {
	URL         *string  `json:"url,omitempty"`
	EventTypes  []string `json:"event_types,omitempty"`
	IsActive    *bool    `json:"is_active,omitempty"`
	ReplaySince *string  `json:"replay_since,omitempty"`
}

// WebhookDelivery is one delivery attempt (GET /webhooks/{id}/deliveries,
// POST /webhooks/{id}/test).
type WebhookDelivery struct {
	ID          string `json:"id"`
	EndpointID  string `json:"endpoint_id"`
	EventID     string `json:"event_id"`
	EventType   string `json:"event_type"`
	Attempt     int    `json:"attempt"`
	Succeeded   bool   `json:"succeeded"`
	StatusCode  int    `json:"status_code,omitempty"`
	Error       string `json:"error,omitempty"`
	DurationMS  int64  `json:"duration_ms"`
	AttemptedAt string `json:"attempted_at"`
	Manual      bool   `json:"manual,omitempty"`
	ReplayID    string `json:"replay_id,omitempty"`
}

// DeliveryRetry is a queued resend (POST …/deliveries/{delivery}/retry).
type DeliveryRetry struct {
	EventID    string `json:"event_id"`
	EndpointID string `json:"endpoint_id"`
	Status     string `json:"status"`
	Attempt    int    `json:"attempt"` // its Service-Delivery-Attempt
}

func webhookPath(id string, rest ...string) string {
	p := "/webhooks/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// Webhooks lists the organisation's webhook endpoints.
func (c *Client) Webhooks(ctx context.Context) iter.Seq2[Webhook, error] {
	return List[Webhook](ctx, c, "/webhooks", nil)
}

// Webhook reads one endpoint.
func (c *Client) Webhook(ctx context.Context, id string) (Webhook, error) {
	return Get[Webhook](ctx, c, webhookPath(id))
}

// CreateWebhook registers an endpoint and returns it with its signing
// secret, shown only here: keep it where the receiver reads it.
func (c *Client) CreateWebhook(ctx context.Context, body NewWebhook) (Webhook, string, error) {
	var out struct {
		Data   Webhook
		Secret string
	}
	_, err := c.Do(ctx, http.MethodPost, "/webhooks", nil, body, &out)
	return out.Data, out.Secret, err
}

// UpdateWebhook changes an endpoint; with ReplaySince, the replay it
// queued is returned too (nil otherwise).
func (c *Client) UpdateWebhook(ctx context.Context, id string, body WebhookUpdate) (Webhook, *Replay, error) {
	var out struct {
		Data   Webhook
		Replay *Replay
	}
	_, err := c.Do(ctx, http.MethodPatch, webhookPath(id), nil, body, &out)
	return out.Data, out.Replay, err
}

// DeleteWebhook removes an endpoint; deliveries to it stop.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	_, err := c.Do(ctx, http.MethodDelete, webhookPath(id), nil, nil, nil)
	return err
}

// RotateSecret gives the endpoint a new secret, returned here only; the
// old one keeps signing beside it for grace (the server's default of 24
// hours when negative).
func (c *Client) RotateSecret(ctx context.Context, id string, grace time.Duration) (Webhook, string, error) {
	body := map[string]any{}
	if grace >= 0 {
		body["grace_period_seconds"] = int(grace.Seconds())
	}
	var out struct {
		Data   Webhook
		Secret string
	}
	_, err := c.Do(ctx, http.MethodPost, webhookPath(id, "rotate-secret"), nil, body, &out)
	return out.Data, out.Secret, err
}

// TestWebhook sends one signed webhook.test event to the endpoint now and
// returns the attempt.
func (c *Client) TestWebhook(ctx context.Context, id string) (WebhookDelivery, error) {
	var out struct{ Data WebhookDelivery }
	_, err := c.Do(ctx, http.MethodPost, webhookPath(id, "test"), nil, nil, &out)
	return out.Data, err
}

// Deliveries lists an endpoint's delivery attempts, newest first.
func (c *Client) Deliveries(ctx context.Context, id string) iter.Seq2[WebhookDelivery, error] {
	return List[WebhookDelivery](ctx, c, webhookPath(id, "deliveries"), nil)
}

// RetryDelivery resends a failed attempt's event once, now.
func (c *Client) RetryDelivery(ctx context.Context, id, deliveryID string) (DeliveryRetry, error) {
	var out struct{ Data DeliveryRetry }
	_, err := c.Do(ctx, http.MethodPost, webhookPath(id, "deliveries", url.PathEscape(deliveryID), "retry"), nil, nil, &out)
	return out.Data, err
}
