// A self-signed TLS certificate made with node:crypto alone (Node has no
// X.509 builder): the DER template of pluginapi/PROTOCOL.md, section 4.
// ECDSA P-256, SHA-256, subject and SAN "localhost", CA, key usage
// digitalSignature and keyCertSign, extended key usage serverAuth and
// clientAuth, valid from a minute ago for a year, a random serial.
'use strict';

const crypto = require('node:crypto');

function len(n) {
  if (n < 0x80) return Buffer.from([n]);
  const bytes = [];
  for (; n > 0; n >>= 8) bytes.unshift(n & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag, ...parts) => {
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
};
const seq = (...p) => tlv(0x30, ...p);
const set = (...p) => tlv(0x31, ...p);
const bool = (v) => tlv(0x01, Buffer.from([v ? 0xff : 0x00]));
const octets = (...p) => tlv(0x04, ...p);
const utf8 = (s) => tlv(0x0c, Buffer.from(s, 'utf8'));
const bits = (unused, bytes) => tlv(0x03, Buffer.from([unused]), bytes);

function integer(buf) {
  let i = 0;
  while (i < buf.length - 1 && buf[i] === 0) i++;
  buf = buf.subarray(i);
  if (buf[0] & 0x80) buf = Buffer.concat([Buffer.from([0]), buf]);
  return tlv(0x02, buf);
}

function oid(s) {
  const ids = s.split('.').map(Number);
  const out = [40 * ids[0] + ids[1]];
  for (const id of ids.slice(2)) {
    const b = [id & 0x7f];
    for (let v = id >> 7; v > 0; v >>= 7) b.unshift(0x80 | (v & 0x7f));
    out.push(...b);
  }
  return tlv(0x06, Buffer.from(out));
}

function utcTime(d) {
  const p = (n) => String(n).padStart(2, '0');
  const s = p(d.getUTCFullYear() % 100) + p(d.getUTCMonth() + 1) + p(d.getUTCDate()) +
    p(d.getUTCHours()) + p(d.getUTCMinutes()) + p(d.getUTCSeconds()) + 'Z';
  return tlv(0x17, Buffer.from(s, 'ascii'));
}

const ecdsaWithSHA256 = seq(oid('1.2.840.10045.4.3.2'));

// makeCert returns {certPem, keyPem, der}.
function makeCert() {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const serial = crypto.randomBytes(16);
  serial[0] &= 0x7f; // positive
  const name = seq(set(seq(oid('2.5.4.3'), utf8('localhost'))));
  const now = Date.now();
  const ext = (id, critical, value) => seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))), // version 3
    integer(serial),
    ecdsaWithSHA256,
    name,
    seq(utcTime(new Date(now - 60e3)), utcTime(new Date(now + 365 * 86400e3))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    tlv(0xa3, seq(
      ext('2.5.29.17', false, seq(tlv(0x82, Buffer.from('localhost')))), // SAN dNSName
      ext('2.5.29.19', true, seq(bool(true))), // CA
      ext('2.5.29.15', true, bits(2, Buffer.from([0x84]))), // digitalSignature, keyCertSign
      ext('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'), oid('1.3.6.1.5.5.7.3.2'))), // server, client auth
    )),
  );
  const sig = crypto.sign('sha256', tbs, privateKey); // DER ECDSA-Sig-Value
  const der = seq(tbs, ecdsaWithSHA256, bits(0, sig));
  const b64 = der.toString('base64');
  const certPem = '-----BEGIN CERTIFICATE-----\n' + b64.replace(/.{1,64}/g, '$&\n') + '-----END CERTIFICATE-----\n';
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' });
  return { certPem, keyPem, der };
}

module.exports = { makeCert };
