package consoleauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/schema"
)

// Payload and record schemas, named as contract 3 names them. OkResponseSchema is shared with
// the console's other groups (one component, one name).
var (
	email = schema.Email().MaxLen(254).Describe("E-mail address; compared without regard to case.")

	RequestCodePayloadSchema = schema.Object(
		schema.Req("email", email),
	).Named("RequestCodePayload")
	VerifyCodePayloadSchema = schema.Object(
		schema.Req("email", email),
		schema.Req("code", schema.String().Match(`^[0-9]{6}$`).Describe("The 6 digits of the e-mailed code.")),
	).Named("VerifyCodePayload")
	TotpCodePayloadSchema = schema.Object(
		schema.Req("code", schema.String().Len(1, 16).Describe("The current code of the authenticator app.")),
	).Named("TotpCodePayload")
	RecoveryCodePayloadSchema = schema.Object(
		schema.Req("code", schema.String().Len(1, 64).Describe("One recovery code, with or without its dash, any case.")),
	).Named("RecoveryCodePayload")
	ProfileUpdateSchema = schema.Object(
		schema.Prop("display_name", schema.String().Len(1, 80).OrNull().Describe("null clears the name.")),
		schema.Prop("locale", schema.String().Len(2, 35).Describe("A language tag such as en or fr-CA.")),
	).Named("ProfileUpdate").Describe("Only the fields sent are written.")

	MePublicSchema = schema.Object(
		schema.Req("user_id", schema.String()),
		schema.Req("email", schema.String()),
		schema.Prop("display_name", schema.String().OrNull()),
		schema.Prop("locale", schema.String().WithDefault(DefaultLocale)),
		schema.Prop("totp_enabled", schema.Boolean().WithDefault(false)),
		schema.Prop("created_at", schema.DateTime()),
		schema.Prop("last_seen_at", schema.DateTime().OrNull()),
	).Named("MePublic")
	SessionSchema = schema.Object(
		schema.Req("token", schema.String().Describe("A fresh session token, ses_ + 43 base62 characters: send it as Authorization: Bearer.")),
		schema.Req("expires_at", schema.DateTime()),
		schema.Req("user", MePublicSchema),
	).Named("Session")
	AuthChallengeSchema = schema.Object(
		schema.Req("method", schema.Enum("email", "totp").Describe("email: a code was sent; totp: send a TOTP or recovery code with temp_token.")),
		schema.Prop("email", schema.String().OrNull().Describe("Where the code went (method email).")),
		schema.Prop("temp_token", schema.String().OrNull().Describe("tmp_ + 43 base62 characters, valid 5 minutes, for verify-totp and verify-recovery (method totp).")),
	).Named("AuthChallenge")
	TotpEnrolmentSchema = schema.Object(
		schema.Req("secret", schema.String().Describe("Base32 secret, for typing into an authenticator app.")),
		schema.Req("otpauth_url", schema.String().Describe("otpauth:// URL, for a QR code.")),
		schema.Req("issuer", schema.String()),
		schema.Req("account", schema.String()),
	).Named("TotpEnrolment")
	RecoveryCodesSchema = schema.Object(
		schema.Req("codes", schema.Array(schema.String()).Count(RecoveryCodeCount, RecoveryCodeCount).Describe("Shown once; each works once.")),
		schema.Req("generated_at", schema.DateTime()),
	).Named("RecoveryCodes")
	RecoveryCodesStatusSchema = schema.Object(
		schema.Req("remaining", schema.Integer()),
		schema.Req("total", schema.Integer()),
	).Named("RecoveryCodesStatus")
	OkResponseSchema = schema.Object(
		schema.Req("ok", schema.Const(true)),
	).Named("OkResponse")
)

// MePublic is the console's view of the signed-in user (spec 2.9).
type MePublic struct {
	UserID      string     `json:"user_id"`
	Email       string     `json:"email"`
	DisplayName *string    `json:"display_name"`
	Locale      string     `json:"locale"`
	TOTPEnabled bool       `json:"totp_enabled"`
	CreatedAt   time.Time  `json:"created_at"`
	LastSeenAt  *time.Time `json:"last_seen_at"`
}

// Public returns the MePublic view of u.
func (u User) Public() MePublic {
	out := MePublic{
		UserID: u.ID, Email: u.Email, DisplayName: u.DisplayName, Locale: u.Locale,
		TOTPEnabled: u.TOTPEnabled, CreatedAt: u.CreatedAt.UTC(),
	}
	if !u.LastSeenAt.IsZero() {
		t := u.LastSeenAt.UTC()
		out.LastSeenAt = &t
	}
	return out
}

// SessionOut is the Session record (contract 3).
type SessionOut struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	User      MePublic  `json:"user"`
}

// AuthChallengeOut is the AuthChallenge record (spec 2.9).
type AuthChallengeOut struct {
	Method    string  `json:"method"`
	Email     *string `json:"email"`
	TempToken *string `json:"temp_token"`
}

// TotpEnrolmentOut is the TotpEnrolment record (contract 3).
type TotpEnrolmentOut struct {
	Secret     string `json:"secret"`
	OTPAuthURL string `json:"otpauth_url"`
	Issuer     string `json:"issuer"`
	Account    string `json:"account"`
}

// RecoveryCodesOut is the RecoveryCodes record (contract 3).
type RecoveryCodesOut struct {
	Codes       []string  `json:"codes"`
	GeneratedAt time.Time `json:"generated_at"`
}

// RecoveryCodesStatusOut is the RecoveryCodesStatus record (contract 3).
type RecoveryCodesStatusOut struct {
	Remaining int `json:"remaining"`
	Total     int `json:"total"`
}

// OkResponse is the OkResponse record (contract 3).
type OkResponse struct {
	OK bool `json:"ok"`
}

type requestCodeIn struct {
	Email string `json:"email"`
}

type verifyCodeIn struct {
	Email string `json:"email"`
	Code  string `json:"code"`
}

type codeIn struct {
	Code string `json:"code"`
}

// profileIn keeps each member raw, so that an absent member (nil) and null differ (spec 4.2:
// only fields sent are written).
type profileIn struct {
	DisplayName json.RawMessage `json:"display_name"`
	Locale      json.RawMessage `json:"locale"`
}

// Public sentences of the handler errors (spec 7, shape 1).
const (
	// DetailInvalidCode is verify-code's one answer to every failure (spec 4.2, spec 7).
	DetailInvalidCode     = "Invalid or expired code"
	DetailInvalidTOTP     = "Invalid TOTP code"
	DetailInvalidRecovery = "Invalid recovery code"
	DetailTOTPEnabled     = "TOTP is already enabled; disable it before setting it up again"
	DetailTOTPNotEnabled  = "TOTP is not enabled on this account"
	DetailNoEnrolment     = "No TOTP enrolment is pending; call POST /console/auth/totp/setup first"
	DetailCodeRequests    = "Too many code requests for this address; retry later"
	DetailTOTPAttempts    = "Too many TOTP or recovery attempts for this account; retry later"
	DetailBusy            = "The account changed while this request ran; retry"
)

// Routes returns the console-auth group (spec 4.2): sign-in, TOTP, recovery codes, profile
// and logout. Mount Middleware(s) in the API's Config.Middleware so that the routes' Security
// is enforced.
func Routes(s *Service) []httpapi.Route {
	h := &handlers{s: s}
	tags := []string{"console auth"}
	session := []httpapi.Security{httpapi.SecuritySession}
	temp := []httpapi.Security{httpapi.SecurityTempToken}
	sessionOK := httpapi.JSONResponse("A session with a fresh token.", SessionSchema)
	limited := func(what string) httpapi.Response { return httpapi.ErrorResponse(what, httpapi.RetryAfter) }
	busy := httpapi.ErrorResponse("Concurrent changes to the account kept refusing the request; retry with backoff.")
	totpLimited := limited("More than 5 TOTP or recovery attempts on this account in the current 15-minute window " +
		"(one bucket shared by verify-totp, verify-recovery, totp/disable, recovery-codes/regenerate and key issuance).")
	return []httpapi.Route{
		{
			Method: http.MethodPost, Path: "/console/auth/request-code", OperationID: "requestCode", Tags: tags,
			Summary: "E-mail a sign-in code (sign-up and sign-in are one route)",
			Description: "Sends a 6-digit code, valid 10 minutes, to any address; an address without an account gets one " +
				"when the code is verified. The answer is the same whether or not the address has an account.",
			Body: RequestCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:              httpapi.JSONResponse("Code sent: method email, email where it went.", AuthChallengeSchema),
				http.StatusTooManyRequests: limited("More than 5 code requests for this address in the current 15-minute window."),
			},
			Handler: httpapi.HandlerFunc(h.requestCode),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/verify-code", OperationID: "verifyCode", Tags: tags,
			Summary: "Verify the e-mailed code: a session, or a TOTP challenge",
			Description: "A code works once, for 10 minutes and at most 5 tries. Without TOTP the answer is a Session; " +
				"with TOTP an AuthChallenge (method totp, temp_token) and never a session.",
			Body: VerifyCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("A Session, or an AuthChallenge for an account with TOTP.",
					schema.AnyOf(SessionSchema, AuthChallengeSchema)),
				http.StatusBadRequest:         httpapi.ErrorResponse("One answer for an unknown address and a wrong, expired, used or exhausted code."),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.HandlerFunc(h.verifyCode),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/verify-totp", OperationID: "verifyTotp", Tags: tags, Security: temp,
			Summary:     "Finish a TOTP sign-in with a code of the authenticator app",
			Description: "The user is the temp_token's. A code is accepted once: a replay is refused.",
			Body:        TotpCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 sessionOK,
				http.StatusBadRequest:         httpapi.ErrorResponse("Wrong code, or a code already used."),
				http.StatusTooManyRequests:    totpLimited,
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.HandlerFunc(h.verifyTOTP),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/verify-recovery", OperationID: "verifyRecovery", Tags: tags, Security: temp,
			Summary:     "Finish a TOTP sign-in with a recovery code",
			Description: "The user is the temp_token's. The recovery code is burned on use.",
			Body:        RecoveryCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 sessionOK,
				http.StatusBadRequest:         httpapi.ErrorResponse("Unknown or already used recovery code."),
				http.StatusTooManyRequests:    totpLimited,
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.HandlerFunc(h.verifyRecovery),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/totp/setup", OperationID: "setupTotp", Tags: tags, Security: session,
			Summary:     "Start a TOTP enrolment",
			Description: "A new secret, pending until confirmed; a second setup replaces a pending one.",
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("The secret to add to an authenticator app.", TotpEnrolmentSchema),
				http.StatusConflict: httpapi.ErrorResponse("TOTP is already enabled."),
			},
			Handler: httpapi.HandlerFunc(h.setupTOTP),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/totp/confirm", OperationID: "confirmTotp", Tags: tags, Security: session,
			Summary:     "Turn TOTP on with a code of the pending secret",
			Description: "Returns the recovery codes, in clear this once.",
			Body:        TotpCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("TOTP is on; the recovery codes.", RecoveryCodesSchema),
				http.StatusBadRequest:         httpapi.ErrorResponse("Wrong code."),
				http.StatusConflict:           httpapi.ErrorResponse("TOTP is already enabled, or no enrolment is pending."),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.HandlerFunc(h.confirmTOTP),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/totp/disable", OperationID: "disableTotp", Tags: tags, Security: session,
			Summary: "Turn TOTP off with a valid code",
			Description: "Discards the secret and the recovery codes and ends every session of the user, the caller's " +
				"included; the answer is the caller's new session.",
			Body: TotpCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("TOTP is off; a new session for the caller.", SessionSchema),
				http.StatusBadRequest:         httpapi.ErrorResponse("Wrong code, or a code already used."),
				http.StatusConflict:           httpapi.ErrorResponse("TOTP is not enabled."),
				http.StatusTooManyRequests:    totpLimited,
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.HandlerFunc(h.disableTOTP),
		},
		{
			Method: http.MethodGet, Path: "/console/auth/recovery-codes", OperationID: "getRecoveryCodesStatus", Tags: tags, Security: session,
			Summary: "How many recovery codes are left",
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("Remaining and total; 0 and 0 without TOTP.", RecoveryCodesStatusSchema),
			},
			Handler: httpapi.HandlerFunc(h.recoveryStatus),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/recovery-codes/regenerate", OperationID: "regenerateRecoveryCodes", Tags: tags, Security: session,
			Summary:     "Replace the recovery codes, with a live TOTP code",
			Description: "The old set stops working; the new one is shown this once.",
			Body:        TotpCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("The new recovery codes.", RecoveryCodesSchema),
				http.StatusBadRequest:         httpapi.ErrorResponse("Wrong code, or a code already used."),
				http.StatusConflict:           httpapi.ErrorResponse("TOTP is not enabled."),
				http.StatusTooManyRequests:    totpLimited,
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.HandlerFunc(h.regenerate),
		},
		{
			Method: http.MethodGet, Path: "/console/auth/me", OperationID: "getMe", Tags: tags, Security: session,
			Summary:     "The signed-in user, with a fresh session token",
			Description: "Renews the session: the answer holds a new token valid 30 days; the old one stays valid until its own expiry or logout.",
			Responses:   map[int]httpapi.Response{http.StatusOK: sessionOK, http.StatusServiceUnavailable: busy},
			Handler:     httpapi.HandlerFunc(h.me),
		},
		{
			Method: http.MethodPatch, Path: "/console/auth/me", OperationID: "updateMe", Tags: tags, Security: session,
			Summary: "Update the profile; only the fields sent are written",
			Body:    ProfileUpdateSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("The updated user.", MePublicSchema),
			},
			Handler: httpapi.HandlerFunc(h.updateMe),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/logout", OperationID: "logout", Tags: tags, Security: session,
			Summary: "Sign out everywhere: every token of the user ends",
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("Signed out.", OkResponseSchema),
			},
			Handler: httpapi.HandlerFunc(h.logout),
		},
	}
}

type handlers struct {
	s *Service
}

// caller is set by Middleware on every route with Security; its absence is a wiring mistake.
func caller(r *http.Request) (Caller, error) {
	c, ok := CallerFrom(r.Context())
	if !ok {
		return Caller{}, errors.New("consoleauth: route served without Middleware")
	}
	return c, nil
}

// fail maps the package's errors to responses (STYLE.md guideline 5); the cause is logged,
// never sent.
func fail(err error, invalid string) error {
	var limited *ratelimit.LimitedError
	pub := func(e *httpapi.Error) error {
		e.Cause = err
		return e
	}
	switch {
	case errors.As(err, &limited):
		detail := DetailTOTPAttempts
		if limited.Rule == CodeRequestCap.Name {
			detail = DetailCodeRequests
		}
		return pub(httpapi.TooManyRequests(detail, limited.RetryAfter))
	case errors.Is(err, ErrInvalidCode):
		return pub(httpapi.BadRequest(DetailInvalidCode))
	case errors.Is(err, ErrInvalidTOTP):
		return pub(httpapi.BadRequest(DetailInvalidTOTP))
	case errors.Is(err, ErrInvalidRecoveryCode):
		return pub(httpapi.BadRequest(DetailInvalidRecovery))
	case errors.Is(err, ErrTOTPEnabled):
		return pub(httpapi.Conflict(DetailTOTPEnabled))
	case errors.Is(err, ErrTOTPNotEnabled):
		return pub(httpapi.Conflict(DetailTOTPNotEnabled))
	case errors.Is(err, ErrNoEnrolment):
		return pub(httpapi.Conflict(DetailNoEnrolment))
	case errors.Is(err, ErrConflict):
		return pub(httpapi.NewError(http.StatusServiceUnavailable, DetailBusy, nil))
	case errors.Is(err, ErrUnauthenticated), errors.Is(err, ErrUserNotFound):
		// The token was valid a moment ago: logged out or used meanwhile.
		return pub(httpapi.Unauthorized(invalid))
	}
	return err
}

func sessionOut(s *Session) SessionOut {
	return SessionOut{Token: s.Token, ExpiresAt: s.ExpiresAt.UTC(), User: s.User.Public()}
}

func (h *handlers) requestCode(w http.ResponseWriter, r *http.Request) error {
	in, err := httpapi.Body[requestCodeIn](r)
	if err != nil {
		return err
	}
	email, err := h.s.RequestCode(r.Context(), in.Email)
	if err != nil {
		return fail(err, DetailInvalidSession)
	}
	return httpapi.WriteJSON(w, http.StatusOK, AuthChallengeOut{Method: "email", Email: &email})
}

func (h *handlers) verifyCode(w http.ResponseWriter, r *http.Request) error {
	in, err := httpapi.Body[verifyCodeIn](r)
	if err != nil {
		return err
	}
	sess, ch, err := h.s.VerifyCode(r.Context(), in.Email, in.Code)
	if errors.Is(err, ErrUnauthenticated) {
		err = ErrInvalidCode // a logout raced the first session; the code is spent either way
	}
	if err != nil {
		return fail(err, DetailInvalidSession)
	}
	if ch != nil {
		return httpapi.WriteJSON(w, http.StatusOK, AuthChallengeOut{Method: "totp", TempToken: &ch.TempToken})
	}
	return httpapi.WriteJSON(w, http.StatusOK, sessionOut(sess))
}

func (h *handlers) verifyTOTP(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[codeIn](r)
	if err != nil {
		return err
	}
	sess, err := h.s.SignInTOTP(r.Context(), c, in.Code)
	if errors.Is(err, ErrTOTPNotEnabled) {
		err = ErrInvalidTOTP
	}
	if err != nil {
		return fail(err, DetailInvalidTemp)
	}
	return httpapi.WriteJSON(w, http.StatusOK, sessionOut(sess))
}

func (h *handlers) verifyRecovery(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[codeIn](r)
	if err != nil {
		return err
	}
	sess, err := h.s.SignInRecovery(r.Context(), c, in.Code)
	if err != nil {
		return fail(err, DetailInvalidTemp)
	}
	return httpapi.WriteJSON(w, http.StatusOK, sessionOut(sess))
}

func (h *handlers) setupTOTP(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	e, err := h.s.SetupTOTP(r.Context(), c.User.ID)
	if err != nil {
		return fail(err, DetailInvalidSession)
	}
	return httpapi.WriteJSON(w, http.StatusOK, TotpEnrolmentOut{Secret: e.Secret, OTPAuthURL: e.OTPAuthURL, Issuer: e.Issuer, Account: e.Account})
}

func (h *handlers) confirmTOTP(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[codeIn](r)
	if err != nil {
		return err
	}
	rc, err := h.s.ConfirmTOTP(r.Context(), c.User.ID, in.Code)
	if err != nil {
		return fail(err, DetailInvalidSession)
	}
	return httpapi.WriteJSON(w, http.StatusOK, RecoveryCodesOut{Codes: rc.Codes, GeneratedAt: rc.GeneratedAt.UTC()})
}

func (h *handlers) disableTOTP(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[codeIn](r)
	if err != nil {
		return err
	}
	sess, err := h.s.DisableTOTP(r.Context(), c.User.ID, in.Code)
	if err != nil {
		return fail(err, DetailInvalidSession)
	}
	return httpapi.WriteJSON(w, http.StatusOK, sessionOut(sess))
}

func (h *handlers) recoveryStatus(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	remaining, total, err := h.s.RecoveryStatus(r.Context(), c.User.ID)
	if err != nil {
		return fail(err, DetailInvalidSession)
	}
	return httpapi.WriteJSON(w, http.StatusOK, RecoveryCodesStatusOut{Remaining: remaining, Total: total})
}

func (h *handlers) regenerate(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[codeIn](r)
	if err != nil {
		return err
	}
	rc, err := h.s.RegenerateRecovery(r.Context(), c.User.ID, in.Code)
	if err != nil {
		return fail(err, DetailInvalidSession)
	}
	return httpapi.WriteJSON(w, http.StatusOK, RecoveryCodesOut{Codes: rc.Codes, GeneratedAt: rc.GeneratedAt.UTC()})
}

func (h *handlers) me(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	sess, err := h.s.Renew(r.Context(), c)
	if err != nil {
		return fail(err, DetailInvalidSession)
	}
	return httpapi.WriteJSON(w, http.StatusOK, sessionOut(sess))
}

func (h *handlers) updateMe(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[profileIn](r)
	if err != nil {
		return err
	}
	var ch ProfileChange
	if in.DisplayName != nil {
		ch.SetDisplayName = true
		if err := json.Unmarshal(in.DisplayName, &ch.DisplayName); err != nil {
			return err
		}
	}
	if in.Locale != nil {
		if err := json.Unmarshal(in.Locale, &ch.Locale); err != nil {
			return err
		}
	}
	u, err := h.s.UpdateProfile(r.Context(), c.User.ID, ch)
	if err != nil {
		return fail(err, DetailInvalidSession)
	}
	return httpapi.WriteJSON(w, http.StatusOK, u.Public())
}

func (h *handlers) logout(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	if err := h.s.Logout(r.Context(), c.User.ID); err != nil {
		return fail(err, DetailInvalidSession)
	}
	return httpapi.WriteJSON(w, http.StatusOK, OkResponse{OK: true})
}
