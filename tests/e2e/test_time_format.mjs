// The browser's time format (static/forge/js/model/time.js) against the cases Django's
// date filter writes alike (tests/fixtures/utc_times.json), run by node:test from
// tests/e2e/test_time_format.py. Node runs under TZ=Pacific/Auckland there: far from UTC.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { utcTime } from "../../static/forge/js/model/time.js";

const CASES = JSON.parse(readFileSync(new URL("../fixtures/utc_times.json", import.meta.url), "utf8")).cases;

test("the process runs far from UTC, so a local time would show", () => {
  assert.notEqual(new Date("2025-01-31T09:05:00Z").getTimezoneOffset(), 0);
});

test("every case reads as the pages write it, to the minute and to the second", () => {
  for (const { value, minutes, seconds } of CASES) {
    assert.equal(utcTime(value), minutes, value);
    assert.equal(utcTime(value, { seconds: true }), seconds, value);
  }
});

test("a Date reads like its ISO string", () => {
  const date = new Date("2025-01-01T00:30:00+01:00");
  assert.equal(utcTime(date), "2024-12-31 23:30");
});

test("no time reads as a dash; what is not a time shows as it came", () => {
  for (const missing of [null, undefined, ""]) assert.equal(utcTime(missing), "—");
  assert.equal(utcTime("yesterday"), "yesterday");
});
