package mail

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
)

// SESClient is the part of the SES v2 client the SES mailer uses; *sesv2.Client is one.
type SESClient interface {
	SendEmail(ctx context.Context, in *sesv2.SendEmailInput, optFns ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error)
}

var _ SESClient = (*sesv2.Client)(nil)

// SES sends through Amazon SES v2 (the mailer of the AWS deployment, docs/architecture.md) as a
// simple message: SES builds the MIME structure from the text and HTML bodies.
type SES struct {
	client SESClient
	from   string
	// ConfigurationSet, when set, names the SES configuration set (bounce and complaint
	// handling) the messages go through.
	ConfigurationSet string
}

var _ Mailer = (*SES)(nil)

// NewSES returns a mailer sending from the verified identity from.
func NewSES(client SESClient, from string) *SES {
	return &SES{client: client, from: from}
}

// Send hands m to SES. The error never holds the body.
func (s *SES) Send(ctx context.Context, m Message) error {
	if err := m.Validate(); err != nil {
		return err
	}
	utf8 := aws.String("UTF-8")
	body := &types.Body{Text: &types.Content{Data: aws.String(m.Text), Charset: utf8}}
	if m.HTML != "" {
		body.Html = &types.Content{Data: aws.String(m.HTML), Charset: utf8}
	}
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(s.from),
		Destination:      &types.Destination{ToAddresses: []string{m.To}},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String(m.Subject), Charset: utf8},
			Body:    body,
		}},
	}
	if s.ConfigurationSet != "" {
		in.ConfigurationSetName = aws.String(s.ConfigurationSet)
	}
	if _, err := s.client.SendEmail(ctx, in); err != nil {
		return fmt.Errorf("mail: SES send %q: %w", m.Subject, err)
	}
	return nil
}
