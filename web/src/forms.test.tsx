import { render } from 'preact';
import { act } from 'preact/test-utils';
import { useState } from 'preact/hooks';
import { describe, expect, it } from 'vitest';
import { ApiError } from './api';
import { Field, FormError, formErrors, useForm } from './ui';
import { mountPoint } from './testing';

const mount = mountPoint();

/** KeyForm is a form shaped like the key form, failing with err when submitted. */
function KeyForm({ err }: { err: ApiError }) {
  const form = useForm(['label', 'totp_code']);
  const [label, setLabel] = useState('Fleet app');
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        form.run(() => Promise.reject(err));
      }}
    >
      <FormError form={form} />
      <Field label="Label" name="label" value={label} onInput={setLabel} form={form} />
      <Field label="Authenticator code" name="totp_code" value="" onInput={() => {}} form={form} />
      <button type="submit">Issue</button>
    </form>
  );
}

async function submit() {
  await act(async () => {
    mount.el.querySelector('form')!.dispatchEvent(new Event('submit', { cancelable: true, bubbles: true }));
  });
  // Let the rejected promise settle and the state update render.
  await act(async () => {
    await Promise.resolve();
  });
}

function input(name: string): HTMLInputElement {
  return mount.el.querySelector(`input[name="${name}"]`) as HTMLInputElement;
}

describe('forms show API errors where they belong', () => {
  it('puts a 422 loc message next to its field and links it', async () => {
    const err = new ApiError(422, 'Please correct the highlighted fields.', [
      { type: 'string_too_long', loc: ['body', 'label'], msg: 'String should have at most 120 characters' },
    ]);
    render(<KeyForm err={err} />, mount.el);
    await submit();
    const label = input('label');
    expect(label.getAttribute('aria-invalid')).toBe('true');
    const describedBy = label.getAttribute('aria-describedby')!;
    expect(document.getElementById(describedBy)?.textContent).toBe('String should have at most 120 characters');
    expect(input('totp_code').getAttribute('aria-invalid')).toBeNull();
    // A field error alone needs no form-level banner.
    expect(mount.el.querySelector('.alert.error')).toBeNull();
  });

  it('shows a handler error (403 wrong TOTP code) for the whole form', async () => {
    render(<KeyForm err={new ApiError(403, 'The authenticator code is missing or wrong.')} />, mount.el);
    await submit();
    expect(mount.el.querySelector('.alert.error')?.textContent).toBe('The authenticator code is missing or wrong.');
    expect(input('label').getAttribute('aria-invalid')).toBeNull();
  });

  it('shows a 429 with its wait', async () => {
    render(<KeyForm err={new ApiError(429, 'Too many attempts. Try again in 2 minutes.', [], 120)} />, mount.el);
    await submit();
    expect(mount.el.querySelector('[role="alert"]')?.textContent).toBe('Too many attempts. Try again in 2 minutes.');
  });

  it('clears old errors on the next submit', async () => {
    let err = new ApiError(422, 'x', [{ type: 'missing', loc: ['body', 'label'], msg: 'Field required' }]);
    const { rerender } = { rerender: (e: ApiError) => render(<KeyForm err={e} />, mount.el) };
    rerender(err);
    await submit();
    expect(input('label').getAttribute('aria-invalid')).toBe('true');
    err = new ApiError(409, 'The live key cap of your plan is reached.');
    rerender(err);
    await submit();
    expect(input('label').getAttribute('aria-invalid')).toBeNull();
    expect(mount.el.querySelector('.alert.error')?.textContent).toBe('The live key cap of your plan is reached.');
  });
});

describe('formErrors', () => {
  it('sends locs the form lacks to the form-level message', () => {
    const err = new ApiError(422, 'Please correct the highlighted fields.', [
      { type: 'missing', loc: ['body', 'label'], msg: 'Field required' },
      { type: 'extra_forbidden', loc: ['body', 'colour'], msg: 'Extra inputs are not permitted' },
      { type: 'model_attributes_type', loc: ['body'], msg: 'Input should be an object' },
    ]);
    const r = formErrors(err, ['label']);
    expect(r.fields).toEqual({ label: 'Field required' });
    expect(r.error).toBe('colour: Extra inputs are not permitted Input should be an object');
  });
  it('places items where locate says first, and the rest by their field', () => {
    const err = new ApiError(422, 'Please correct the highlighted fields.', [
      { type: 'value_error', loc: ['body', 'area', 'coordinates', 0, 5], msg: 'the position repeats the one before it' },
      { type: 'value_error', loc: ['body', 'area', 'coordinates', 0, 7], msg: 'a later one' },
      { type: 'string_too_short', loc: ['body', 'name'], msg: 'String should have at least 1 character' },
      { type: 'value_error', loc: ['body', 'area', 'lat'], msg: 'out of range' },
    ]);
    const locate = (v: { loc: (string | number)[]; msg: string }) =>
      v.loc[2] === 'coordinates' ? { field: 'polygon', msg: `At position ${v.loc[4]}: ${v.msg}` } : v.loc[2] === 'lat' ? { field: 'elsewhere', msg: v.msg } : null;
    const r = formErrors(err, ['name', 'polygon', 'area'], locate);
    // The first item at a field is shown; one placed at a field the form lacks falls back to its own field.
    expect(r.fields).toEqual({ polygon: 'At position 5: the position repeats the one before it', name: 'String should have at least 1 character', area: 'out of range' });
    expect(r.error).toBeNull();
  });
  it('says something for an error that is not from the API', () => {
    expect(formErrors(new Error('boom'), []).error).toMatch(/went wrong/);
  });
});
