// The prelude runs as a global script in every fresh VM, before the
// module. It takes the host functions Go registered (__cfs_*) off the
// global object and builds console, process, timers and the objects the
// built-in modules (node:fs/promises, node:path, computerfs) export.
(function () {
  "use strict";
  const G = globalThis;
  const hostWrite = G.__cfs_write, hostFS = G.__cfs_fs, hostDone = G.__cfs_done, hostEnv = G.__cfs_env;
  delete G.__cfs_write; delete G.__cfs_fs; delete G.__cfs_done; delete G.__cfs_env;

  // ---- formatting, like node's util.inspect for the common cases
  function inspect(v, depth, seen) {
    depth = depth || 0;
    seen = seen || [];
    switch (typeof v) {
      case "string": return depth === 0 ? v : JSON.stringify(v).replace(/^"|"$/g, "'");
      case "number": return Object.is(v, -0) ? "-0" : String(v);
      case "bigint": return String(v) + "n";
      case "undefined": return "undefined";
      case "boolean": return String(v);
      case "symbol": return v.toString();
      case "function": return "[Function: " + (v.name || "(anonymous)") + "]";
    }
    if (v === null) return "null";
    if (v instanceof Error) return v.stack ? v.name + ": " + v.message + "\n" + v.stack.replace(/\n$/, "") : v.name + ": " + v.message;
    if (seen.indexOf(v) >= 0) return "[Circular]";
    if (depth > 4) return Array.isArray(v) ? "[Array]" : "[Object]";
    if (v instanceof Date) return isNaN(v) ? "Invalid Date" : v.toISOString();
    if (v instanceof RegExp) return String(v);
    if (v instanceof Promise) return "Promise { <pending> }";
    if (v instanceof URL_) return "URL { href: " + inspect(v.href, 1) + " }";
    if (v instanceof G.URLSearchParams) return "URLSearchParams { " + Array.from(v, ([k, x]) => inspect(k, 1) + " => " + inspect(x, 1)).join(", ") + " }";
    seen = seen.concat([v]);
    if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
      const items = Array.prototype.slice.call(v, 0, 100).map(String);
      if (v.length > 100) items.push("... " + (v.length - 100) + " more items");
      return v.constructor.name + "(" + v.length + ") [ " + items.join(", ") + " ]";
    }
    if (Array.isArray(v)) {
      const items = v.slice(0, 100).map((x) => inspect(x, depth + 1, seen));
      if (v.length > 100) items.push("... " + (v.length - 100) + " more items");
      return items.length ? "[ " + items.join(", ") + " ]" : "[]";
    }
    if (v instanceof Map) return "Map(" + v.size + ") { " + Array.from(v, ([k, x]) => inspect(k, depth + 1, seen) + " => " + inspect(x, depth + 1, seen)).join(", ") + " }";
    if (v instanceof Set) return "Set(" + v.size + ") { " + Array.from(v, (x) => inspect(x, depth + 1, seen)).join(", ") + " }";
    const keys = Object.keys(v);
    const parts = keys.map((k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)) + ": " + inspect(v[k], depth + 1, seen));
    const name = v.constructor && v.constructor !== Object && v.constructor.name ? v.constructor.name + " " : "";
    return parts.length ? name + "{ " + parts.join(", ") + " }" : name + "{}";
  }
  function format(args) {
    let out = [];
    let i = 0;
    if (typeof args[0] === "string" && args[0].indexOf("%") >= 0 && args.length > 1) {
      i = 1;
      out.push(args[0].replace(/%[sdifjoO%]/g, (m) => {
        if (m === "%%") return "%";
        if (i >= args.length) return m;
        const a = args[i++];
        switch (m) {
          case "%s": return typeof a === "string" ? a : inspect(a, 1);
          case "%d": case "%i": return String(m === "%i" ? parseInt(a) : Number(a));
          case "%f": return String(parseFloat(a));
          case "%j": try { return JSON.stringify(a); } catch (e) { return "[Circular]"; }
          default: return inspect(a, 1);
        }
      }));
    }
    for (; i < args.length; i++) out.push(inspect(args[i]));
    return out.join(" ") + "\n";
  }
  const out = (...a) => hostWrite(1, format(a));
  const err = (...a) => hostWrite(2, format(a));
  const counts = {}, timers = {};
  G.console = {
    log: out, info: out, debug: out, error: err, warn: err, trace: err,
    dir: (v) => hostWrite(1, inspect(v, 1) + "\n"),
    assert: (c, ...a) => { if (!c) err("Assertion failed" + (a.length ? ": " + format(a).slice(0, -1) : "")); },
    count: (l = "default") => out(l + ": " + (counts[l] = (counts[l] || 0) + 1)),
    time: (l = "default") => { timers[l] = Date.now(); },
    timeEnd: (l = "default") => { out(l + ": " + (Date.now() - timers[l]) + "ms"); delete timers[l]; },
    table: (v) => out(v),
  };

  // ---- base64 for binary file data
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const B64R = new Uint8Array(128);
  for (let i = 0; i < 64; i++) B64R[B64.charCodeAt(i)] = i;
  function b64encode(u8) {
    let s = "";
    for (let i = 0; i < u8.length; i += 3) {
      const a = u8[i], b = u8[i + 1], c = u8[i + 2];
      s += B64[a >> 2] + B64[((a & 3) << 4) | ((b || 0) >> 4)] +
        (i + 1 < u8.length ? B64[((b & 15) << 2) | ((c || 0) >> 6)] : "=") +
        (i + 2 < u8.length ? B64[c & 63] : "=");
    }
    return s;
  }
  function b64decode(s) {
    let n = (s.length / 4) * 3;
    if (s.endsWith("==")) n -= 2; else if (s.endsWith("=")) n -= 1;
    const u8 = new Uint8Array(n);
    for (let i = 0, j = 0; i < s.length; i += 4) {
      const v = (B64R[s.charCodeAt(i)] << 18) | (B64R[s.charCodeAt(i + 1)] << 12) | (B64R[s.charCodeAt(i + 2)] << 6) | B64R[s.charCodeAt(i + 3)];
      if (j < n) u8[j++] = v >> 16;
      if (j < n) u8[j++] = (v >> 8) & 255;
      if (j < n) u8[j++] = v & 255;
    }
    return u8;
  }
  function utf8encode(s) {
    const u = unescape(encodeURIComponent(s));
    const u8 = new Uint8Array(u.length);
    for (let i = 0; i < u.length; i++) u8[i] = u.charCodeAt(i);
    return u8;
  }
  function utf8decode(u8) {
    let s = "";
    for (let i = 0; i < u8.length; i += 8192) s += String.fromCharCode.apply(null, u8.subarray(i, i + 8192));
    try { return decodeURIComponent(escape(s)); } catch (e) { return s; }
  }
  if (typeof G.TextEncoder === "undefined") {
    G.TextEncoder = class TextEncoder { get encoding() { return "utf-8"; } encode(s = "") { return utf8encode(String(s)); } };
  }
  if (typeof G.TextDecoder === "undefined") {
    G.TextDecoder = class TextDecoder {
      get encoding() { return "utf-8"; }
      decode(b) { if (!b) return ""; return utf8decode(b instanceof Uint8Array ? b : new Uint8Array(b.buffer || b)); }
    };
  }

  // ---- URL and URLSearchParams: WHATWG-shaped, for the common cases
  // (absolute URLs, relative resolution against a base, search params);
  // no IDNA or IPv4 number forms.
  const SPECIAL = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443", "ftp:": "21", "file:": "" };
  const invalidURL = (input) => { const e = new TypeError("Invalid URL: " + input); e.code = "ERR_INVALID_URL"; e.input = String(input); return e; };
  const pct = (re) => (s) => s.replace(re, (c) => encodeURIComponent(c));
  const encPath = pct(/[\u0000-\u0020"<>`{}\u007f-\u{10ffff}]/gu);
  const encQuery = pct(/[\u0000-\u0020"#<>\u007f-\u{10ffff}]/gu);
  const encSpecialQuery = pct(/[\u0000-\u0020"#'<>\u007f-\u{10ffff}]/gu);
  const encFragment = pct(/[\u0000-\u0020"<>`\u007f-\u{10ffff}]/gu);
  const encUserinfo = pct(/[\u0000-\u0020"#<>?`{}/:;=@[\\\]^|\u007f-\u{10ffff}]/gu);
  function normPath(p) {
    const segs = p.split("/"), out = [];
    for (let i = 1; i < segs.length; i++) {
      const s = segs[i].toLowerCase(), last = i === segs.length - 1;
      if (s === ".." || s === ".%2e" || s === "%2e." || s === "%2e%2e") { out.pop(); if (last) out.push(""); }
      else if (s === "." || s === "%2e") { if (last) out.push(""); }
      else out.push(segs[i]);
    }
    return "/" + out.join("/");
  }
  function parseHost(h, special, input) {
    if (h[0] === "[") {
      if (!/^\[[0-9A-Fa-f:.]+\]$/.test(h)) throw invalidURL(input);
      return h.toLowerCase();
    }
    if (special) {
      try { h = decodeURIComponent(h); } catch (e) { throw invalidURL(input); }
      h = h.toLowerCase();
    }
    if (/[\u0000-\u0020#%/:<>?@[\\\]^|]/.test(h) && (special || /[\u0000\u0009\u000a\u000d #/:<>?@[\\\]^|]/.test(h))) throw invalidURL(input);
    return h;
  }
  // parseURL returns the URL's record: protocol, username, password,
  // hostname (null: no authority), port, pathname, search, hash, and
  // opaque (a path that is not hierarchical: mailto:x, data:...).
  function parseURL(input, base) {
    let s = String(input).replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, "").replace(/[\t\n\r]/g, "");
    const m = /^([A-Za-z][A-Za-z0-9+.-]*):([\s\S]*)$/.exec(s);
    let protocol, rest;
    if (m && !(base && (m[1].toLowerCase() + ":") === base.protocol && base.protocol in SPECIAL && base.protocol !== "file:" && !/^[/\\]/.test(m[2]))) {
      protocol = m[1].toLowerCase() + ":";
      rest = m[2];
    } else {
      if (m) s = m[2];
      if (!base) throw invalidURL(input);
      if (base.opaque && s[0] !== "#") throw invalidURL(input);
      protocol = base.protocol;
      const special = protocol in SPECIAL;
      if (special) s = s.replace(/\\/g, "/");
      const auth = () => (base.hostname === null ? "" : "//" + (base.username ? base.username + (base.password ? ":" + base.password : "") + "@" : "") + base.hostname + (base.port ? ":" + base.port : ""));
      if (s.startsWith("//")) rest = s;
      else if (s[0] === "/") rest = auth() + s;
      else if (s === "" ) rest = auth() + base.pathname + base.search;
      else if (s[0] === "?") rest = auth() + base.pathname + s;
      else if (s[0] === "#") rest = (base.opaque ? base.pathname : auth() + base.pathname) + base.search + s;
      else {
        const dir = base.pathname.slice(0, base.pathname.lastIndexOf("/") + 1) || "/";
        rest = auth() + dir + s;
      }
    }
    const special = protocol in SPECIAL;
    if (special) rest = rest.replace(/\\/g, "/");
    const r = { protocol, username: "", password: "", hostname: null, port: "", pathname: "", search: "", hash: "", opaque: false };
    let i = rest.indexOf("#");
    if (i >= 0) { const h = rest.slice(i + 1); r.hash = h === "" ? "" : "#" + encFragment(h); rest = rest.slice(0, i); }
    i = rest.indexOf("?");
    if (i >= 0) { const q = rest.slice(i + 1); r.search = q === "" ? "" : "?" + (special ? encSpecialQuery(q) : encQuery(q)); rest = rest.slice(0, i); }
    if (special && protocol !== "file:") rest = "//" + rest.replace(/^\/*/, "");
    if (rest.startsWith("//")) {
      rest = rest.slice(2);
      let j = rest.indexOf("/");
      if (j < 0) j = rest.length;
      let authority = rest.slice(0, j);
      rest = rest.slice(j);
      const at = authority.lastIndexOf("@");
      if (at >= 0) {
        const ui = authority.slice(0, at), c = ui.indexOf(":");
        r.username = encUserinfo(c >= 0 ? ui.slice(0, c) : ui);
        r.password = c >= 0 ? encUserinfo(ui.slice(c + 1)) : "";
        authority = authority.slice(at + 1);
      }
      const pm = /:(\d*)$/.exec(authority);
      if (pm && !(authority[0] === "[" && authority.lastIndexOf("]") > pm.index)) {
        authority = authority.slice(0, pm.index);
        if (pm[1] !== "") {
          const port = parseInt(pm[1], 10);
          if (port > 65535) throw invalidURL(input);
          r.port = SPECIAL[protocol] === String(port) ? "" : String(port);
        }
      } else if (/:/.test(authority) && authority[0] !== "[") throw invalidURL(input);
      r.hostname = parseHost(authority, special, input);
      if (special && protocol !== "file:" && r.hostname === "") throw invalidURL(input);
      if (protocol === "file:" && r.hostname === "localhost") r.hostname = "";
      r.pathname = rest === "" ? (special ? "/" : "") : normPath(encPath(rest));
    } else if (protocol === "file:") {
      r.hostname = "";
      r.pathname = normPath(encPath(rest[0] === "/" ? rest : "/" + rest));
    } else if (rest[0] === "/") {
      r.pathname = normPath(encPath(rest));
    } else {
      r.opaque = true;
      r.pathname = pct(/[\u0000-\u001f\u007f-\u{10ffff}]/gu)(rest);
    }
    return r;
  }
  const formEncode = (s) => encodeURIComponent(s).replace(/[!'()~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase()).replace(/%20/g, "+");
  const formDecode = (s) => { s = s.replace(/\+/g, " "); try { return decodeURIComponent(s); } catch (e) { return s.replace(/%([0-9A-Fa-f]{2})/g, (x, h) => String.fromCharCode(parseInt(h, 16))); } };
  const urlRec = new WeakMap(), paramsRec = new WeakMap();
  class URLSearchParams {
    constructor(init) {
      const p = { list: [], url: null };
      paramsRec.set(this, p);
      if (init === undefined || init === null) return;
      if (init instanceof URLSearchParams) p.list = paramsRec.get(init).list.map((e) => e.slice());
      else if (typeof init === "object" && typeof init[Symbol.iterator] === "function") {
        for (const pair of init) {
          const a = Array.from(pair);
          if (a.length !== 2) throw new TypeError("Each query pair must be an iterable [name, value] tuple");
          p.list.push([String(a[0]), String(a[1])]);
        }
      } else if (typeof init === "object") {
        for (const k of Object.keys(init)) p.list.push([k, String(init[k])]);
      } else p.list = parseQuery(String(init));
    }
    get size() { return paramsRec.get(this).list.length; }
    append(name, value) { paramsRec.get(this).list.push([String(name), String(value)]); update(this); }
    delete(name, value) {
      const p = paramsRec.get(this);
      name = String(name);
      p.list = p.list.filter((e) => !(e[0] === name && (value === undefined || e[1] === String(value))));
      update(this);
    }
    get(name) { const e = paramsRec.get(this).list.find((e) => e[0] === String(name)); return e ? e[1] : null; }
    getAll(name) { return paramsRec.get(this).list.filter((e) => e[0] === String(name)).map((e) => e[1]); }
    has(name, value) { return paramsRec.get(this).list.some((e) => e[0] === String(name) && (value === undefined || e[1] === String(value))); }
    set(name, value) {
      const p = paramsRec.get(this);
      name = String(name);
      const i = p.list.findIndex((e) => e[0] === name);
      if (i < 0) p.list.push([name, String(value)]);
      else { p.list[i][1] = String(value); p.list = p.list.filter((e, j) => j <= i || e[0] !== name); }
      update(this);
    }
    sort() { const p = paramsRec.get(this); p.list = p.list.map((e, i) => [e, i]).sort((a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1])).map((x) => x[0]); update(this); }
    forEach(f, thisArg) { for (const [k, v] of paramsRec.get(this).list.slice()) f.call(thisArg, v, k, this); }
    *entries() { const p = paramsRec.get(this); for (let i = 0; i < p.list.length; i++) yield [p.list[i][0], p.list[i][1]]; }
    *keys() { for (const e of this.entries()) yield e[0]; }
    *values() { for (const e of this.entries()) yield e[1]; }
    [Symbol.iterator]() { return this.entries(); }
    toString() { return paramsRec.get(this).list.map((e) => formEncode(e[0]) + "=" + formEncode(e[1])).join("&"); }
    get [Symbol.toStringTag]() { return "URLSearchParams"; }
  }
  function parseQuery(s) {
    if (s[0] === "?") s = s.slice(1);
    const list = [];
    for (const part of s.split("&")) {
      if (part === "") continue;
      const i = part.indexOf("=");
      list.push(i < 0 ? [formDecode(part), ""] : [formDecode(part.slice(0, i)), formDecode(part.slice(i + 1))]);
    }
    return list;
  }
  function update(params) {
    const p = paramsRec.get(params);
    if (!p.url) return;
    const s = params.toString();
    urlRec.get(p.url).search = s === "" ? "" : "?" + s;
  }
  const hrefOf = (r) => r.protocol + (r.hostname === null ? "" : "//" + (r.username || r.password ? r.username + (r.password ? ":" + r.password : "") + "@" : "") + r.hostname + (r.port ? ":" + r.port : "")) +
    (r.hostname === null && !r.opaque && r.pathname.startsWith("//") ? "/." : "") + r.pathname + r.search + r.hash;
  class URL {
    constructor(url, base) {
      let b;
      if (base !== undefined) b = base instanceof URL ? urlRec.get(base) : parseURL(base);
      urlRec.set(this, parseURL(url instanceof URL ? url.href : url, b));
      const params = new URLSearchParams(urlRec.get(this).search);
      paramsRec.get(params).url = this;
      Object.defineProperty(this, "_params", { value: params });
    }
    static canParse(url, base) { try { new URL(url, base); return true; } catch (e) { return false; } }
    static parse(url, base) { try { return new URL(url, base); } catch (e) { return null; } }
    get href() { return hrefOf(urlRec.get(this)); }
    set href(v) { const r = parseURL(v); urlRec.set(this, r); paramsRec.get(this._params).list = parseQuery(r.search); }
    get origin() {
      const r = urlRec.get(this);
      return r.protocol in SPECIAL && r.protocol !== "file:" ? r.protocol + "//" + r.hostname + (r.port ? ":" + r.port : "") : "null";
    }
    get protocol() { return urlRec.get(this).protocol; }
    set protocol(v) {
      const r = urlRec.get(this), p = String(v).replace(/:.*$/s, "").toLowerCase() + ":";
      if (!/^[a-z][a-z0-9+.-]*:$/.test(p) || (p in SPECIAL) !== (r.protocol in SPECIAL)) return;
      r.protocol = p;
      if (SPECIAL[p] === r.port) r.port = "";
    }
    get username() { return urlRec.get(this).username; }
    set username(v) { const r = urlRec.get(this); if (r.hostname) r.username = encUserinfo(String(v)); }
    get password() { return urlRec.get(this).password; }
    set password(v) { const r = urlRec.get(this); if (r.hostname) r.password = encUserinfo(String(v)); }
    get host() { const r = urlRec.get(this); return r.hostname === null ? "" : r.hostname + (r.port ? ":" + r.port : ""); }
    set host(v) {
      const r = urlRec.get(this);
      if (r.opaque) return;
      try { const n = parseURL(r.protocol + "//" + String(v) + "/"); r.hostname = n.hostname; if (/:\d*$/.test(String(v))) r.port = n.port; } catch (e) {}
    }
    get hostname() { const r = urlRec.get(this); return r.hostname === null ? "" : r.hostname; }
    set hostname(v) {
      const r = urlRec.get(this);
      if (r.opaque) return;
      try { r.hostname = parseURL(r.protocol + "//" + String(v).replace(/:.*$/s, "") + "/").hostname; } catch (e) {}
    }
    get port() { return urlRec.get(this).port; }
    set port(v) {
      const r = urlRec.get(this), s = String(v);
      if (!r.hostname || r.protocol === "file:") return;
      if (s === "") { r.port = ""; return; }
      const m = /^\d+/.exec(s);
      if (!m || +m[0] > 65535) return;
      r.port = SPECIAL[r.protocol] === String(+m[0]) ? "" : String(+m[0]);
    }
    get pathname() { return urlRec.get(this).pathname; }
    set pathname(v) {
      const r = urlRec.get(this);
      if (r.opaque) return;
      let p = String(v);
      if (r.protocol in SPECIAL) p = p.replace(/\\/g, "/");
      if (p[0] !== "/" && (r.protocol in SPECIAL || r.hostname !== null)) p = "/" + p;
      r.pathname = p === "" ? "" : normPath(encPath(p).replace(/\?/g, "%3F").replace(/#/g, "%23"));
    }
    get search() { return urlRec.get(this).search; }
    set search(v) {
      const r = urlRec.get(this);
      let s = String(v);
      if (s[0] === "?") s = s.slice(1);
      r.search = s === "" ? "" : "?" + (r.protocol in SPECIAL ? encSpecialQuery(s) : encQuery(s));
      paramsRec.get(this._params).list = parseQuery(s);
    }
    get searchParams() { return this._params; }
    get hash() { return urlRec.get(this).hash; }
    set hash(v) { let s = String(v); if (s[0] === "#") s = s.slice(1); urlRec.get(this).hash = s === "" ? "" : "#" + encFragment(s); }
    toString() { return this.href; }
    toJSON() { return this.href; }
    get [Symbol.toStringTag]() { return "URL"; }
  }
  if (typeof G.URL === "undefined") G.URL = URL;
  if (typeof G.URLSearchParams === "undefined") G.URLSearchParams = URLSearchParams;
  const URL_ = G.URL;

  // ---- node:fs/promises over the host
  function call(op, args) {
    const r = JSON.parse(hostFS(op, JSON.stringify(args)));
    if (r.e) {
      const e = new Error(r.e.message);
      e.code = r.e.code;
      if (r.e.errno) e.errno = -r.e.errno;
      if (r.e.syscall) e.syscall = r.e.syscall;
      if (r.e.path !== undefined) e.path = r.e.path;
      if (r.e.dest !== undefined) e.dest = r.e.dest;
      throw e;
    }
    return r.v;
  }
  const promised = (f) => function () {
    try { return Promise.resolve(f.apply(this, arguments)); } catch (e) { return Promise.reject(e); }
  };
  const pathArg = (p) => {
    if (p instanceof URL_) {
      if (p.protocol !== "file:") { const e = new TypeError("The URL must be of scheme file"); e.code = "ERR_INVALID_URL_SCHEME"; throw e; }
      return decodeURIComponent(p.pathname);
    }
    if (typeof p !== "string") { const e = new TypeError('The "path" argument must be of type string. Received ' + inspect(p, 1)); e.code = "ERR_INVALID_ARG_TYPE"; throw e; }
    return p;
  };
  const encOf = (o) => (typeof o === "string" ? o : o && o.encoding) || null;
  function dataArg(d) {
    if (typeof d === "string") return { data: d };
    if (d instanceof ArrayBuffer) d = new Uint8Array(d);
    if (ArrayBuffer.isView(d)) return { b64: b64encode(new Uint8Array(d.buffer, d.byteOffset, d.byteLength)) };
    return { data: String(d) };
  }
  const S_IFMT = 0o170000, S_IFREG = 0o100000, S_IFDIR = 0o040000, S_IFLNK = 0o120000;
  class Stats {
    constructor(i) { Object.assign(this, i); this.mtime = new Date(this.mtimeMs); this.atime = this.mtime; this.ctime = this.mtime; this.birthtime = this.mtime; }
    isFile() { return (this.mode & S_IFMT) === S_IFREG; }
    isDirectory() { return (this.mode & S_IFMT) === S_IFDIR; }
    isSymbolicLink() { return (this.mode & S_IFMT) === S_IFLNK; }
    isFIFO() { return (this.mode & S_IFMT) === 0o010000; }
    isSocket() { return (this.mode & S_IFMT) === 0o140000; }
    isCharacterDevice() { return (this.mode & S_IFMT) === 0o020000; }
    isBlockDevice() { return (this.mode & S_IFMT) === 0o060000; }
  }
  class Dirent {
    constructor(name, type, parentPath) { this.name = name; this.parentPath = parentPath; this.path = parentPath; Object.defineProperty(this, "_t", { value: type }); }
    isFile() { return this._t === "file"; }
    isDirectory() { return this._t === "dir"; }
    isSymbolicLink() { return this._t === "symlink"; }
    isFIFO() { return this._t === "fifo"; }
    isSocket() { return this._t === "socket"; }
    isCharacterDevice() { return this._t === "char"; }
    isBlockDevice() { return this._t === "block"; }
  }
  const fsp = {
    readFile(p, o) {
      const enc = encOf(o);
      const v = call("readFile", { path: pathArg(p), text: enc === "utf8" || enc === "utf-8" });
      if (enc === "utf8" || enc === "utf-8") return v;
      const u8 = b64decode(v);
      if (enc === "base64") return v;
      if (enc === "latin1" || enc === "binary") return String.fromCharCode.apply(null, u8);
      if (enc) return utf8decode(u8);
      return u8;
    },
    writeFile(p, d, o) { call("writeFile", Object.assign({ path: pathArg(p), mode: o && o.mode, append: !!(o && o.flag && o.flag[0] === "a"), exclusive: !!(o && o.flag === "wx") }, dataArg(d))); },
    appendFile(p, d, o) { call("writeFile", Object.assign({ path: pathArg(p), mode: o && o.mode, append: true }, dataArg(d))); },
    mkdir(p, o) { return call("mkdir", { path: pathArg(p), recursive: !!(o && o.recursive), mode: o && typeof o === "object" ? o.mode : o }); },
    readdir(p, o) {
      const dir = pathArg(p);
      const ents = call("readdir", { path: dir });
      if (o && o.withFileTypes) return ents.map((e) => new Dirent(e.name, e.type, dir));
      return ents.map((e) => e.name);
    },
    stat(p) { return new Stats(call("stat", { path: pathArg(p) })); },
    lstat(p) { return new Stats(call("lstat", { path: pathArg(p) })); },
    rm(p, o) { call("rm", { path: pathArg(p), recursive: !!(o && o.recursive), force: !!(o && o.force) }); },
    rmdir(p, o) { call("rmdir", { path: pathArg(p), recursive: !!(o && o.recursive) }); },
    unlink(p) { call("unlink", { path: pathArg(p) }); },
    rename(a, b) { call("rename", { path: pathArg(a), dest: pathArg(b) }); },
    copyFile(a, b) { call("copy", { path: pathArg(a), dest: pathArg(b) }); },
    cp(a, b, o) { call("copy", { path: pathArg(a), dest: pathArg(b), recursive: !!(o && o.recursive) }); },
    symlink(target, p) { call("symlink", { dest: pathArg(target), path: pathArg(p) }); },
    readlink(p) { return call("readlink", { path: pathArg(p) }); },
    realpath(p) { return call("realpath", { path: pathArg(p) }); },
    access(p) { call("stat", { path: pathArg(p) }); },
    chmod(p, mode) { call("chmod", { path: pathArg(p), mode: typeof mode === "string" ? parseInt(mode, 8) : mode }); },
    truncate(p, len) { call("truncate", { path: pathArg(p), size: len || 0 }); },
    glob(pattern) { return call("glob", { pattern: String(pattern) }); },
    grep(pattern, p, o) {
      if (p && typeof p === "object") { o = p; p = undefined; }
      o = o || {};
      return call("grep", { pattern: String(pattern), path: p === undefined ? "" : pathArg(p), regex: !!o.regex, ignoreCase: !!o.ignoreCase, include: o.include, exclude: o.exclude, mode: o.mode, limit: o.limit });
    },
  };
  const fsPromises = {};
  for (const k of Object.keys(fsp)) fsPromises[k] = promised(fsp[k]);
  fsPromises.constants = { F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1 };

  // ---- node:path (POSIX)
  function normalizeString(p, allowAbove) {
    const out = [];
    for (const seg of p.split("/")) {
      if (seg === "" || seg === ".") continue;
      if (seg === "..") {
        if (out.length && out[out.length - 1] !== "..") out.pop();
        else if (allowAbove) out.push("..");
      } else out.push(seg);
    }
    return out.join("/");
  }
  const str = (p) => { if (typeof p !== "string") { const e = new TypeError('The "path" argument must be of type string. Received ' + inspect(p, 1)); e.code = "ERR_INVALID_ARG_TYPE"; throw e; } return p; };
  const path = {
    sep: "/", delimiter: ":",
    normalize(p) {
      str(p);
      if (p === "") return ".";
      const abs = p[0] === "/", trail = p[p.length - 1] === "/";
      let r = normalizeString(p, !abs);
      if (r === "" && !abs) r = ".";
      if (r !== "" && trail) r += "/";
      return abs ? "/" + r : r;
    },
    join(...parts) { const j = parts.map(str).filter((x) => x !== "").join("/"); return j === "" ? "." : path.normalize(j); },
    resolve(...parts) {
      let r = "";
      for (let i = parts.length - 1; i >= 0 && r[0] !== "/"; i--) if (str(parts[i]) !== "") r = parts[i] + (r ? "/" + r : "");
      if (r[0] !== "/") r = cwd + (r ? "/" + r : "");
      return "/" + normalizeString(r, false);
    },
    isAbsolute(p) { return str(p)[0] === "/"; },
    dirname(p) {
      str(p);
      if (p === "") return ".";
      let end = p.length;
      while (end > 1 && p[end - 1] === "/") end--;
      const i = p.lastIndexOf("/", end - 1);
      if (i < 0) return ".";
      if (i === 0) return "/";
      let j = i;
      while (j > 1 && p[j - 1] === "/") j--;
      return p.slice(0, j);
    },
    basename(p, ext) {
      str(p);
      let end = p.length;
      while (end > 1 && p[end - 1] === "/") end--;
      let b = p.slice(p.lastIndexOf("/", end - 1) + 1, end);
      if (b === "/" ) b = "";
      if (ext && b.endsWith(ext) && b !== ext) b = b.slice(0, b.length - ext.length);
      return b;
    },
    extname(p) {
      const b = path.basename(p);
      const i = b.lastIndexOf(".");
      return i <= 0 ? "" : b.slice(i);
    },
    relative(from, to) {
      const f = path.resolve(from).split("/").filter(Boolean), t = path.resolve(to).split("/").filter(Boolean);
      let i = 0;
      while (i < f.length && i < t.length && f[i] === t[i]) i++;
      return f.slice(i).map(() => "..").concat(t.slice(i)).join("/");
    },
    parse(p) {
      const root = str(p)[0] === "/" ? "/" : "", base = path.basename(p), ext = path.extname(p);
      let dir = path.dirname(p);
      if (dir === "." && p.indexOf("/") < 0) dir = "";
      return { root, dir, base, ext, name: ext ? base.slice(0, base.length - ext.length) : base };
    },
    format(o) { const dir = o.dir || o.root || ""; const base = o.base || (o.name || "") + (o.ext || ""); return dir ? (dir === o.root ? dir + base : dir + "/" + base) : base; },
    toNamespacedPath(p) { return p; },
  };
  path.posix = path;

  // ---- process, timers
  const env = JSON.parse(hostEnv("env"));
  const cwd = hostEnv("cwd");
  const argv = JSON.parse(hostEnv("argv"));
  class ExitSignal { constructor(code) { this.code = code; } }
  G.process = {
    env, argv, platform: "computerfs", version: "v0", versions: {}, exitCode: undefined,
    cwd: () => cwd,
    exit(code) { throw new ExitSignal(code === undefined ? (G.process.exitCode || 0) : code | 0); },
    nextTick(f, ...a) { Promise.resolve().then(() => f(...a)); },
    hrtime: Object.assign(() => { const t = performanceNow(); return [Math.floor(t / 1000), Math.floor((t % 1000) * 1e6)]; }, { bigint: () => BigInt(Math.floor(performanceNow() * 1e6)) }),
    stdout: { write: (s) => { hostWrite(1, typeof s === "string" ? s : utf8decode(s)); return true; } },
    stderr: { write: (s) => { hostWrite(2, typeof s === "string" ? s : utf8decode(s)); return true; } },
  };
  const t0 = Date.now();
  const performanceNow = () => Date.now() - t0;
  if (typeof G.performance === "undefined") G.performance = { now: performanceNow };
  let timerSeq = 0;
  const timerQ = new Map();
  G.setTimeout = (f, ms, ...a) => { const id = ++timerSeq; timerQ.set(id, { f, a, at: Date.now() + (+ms || 0), seq: id }); return id; };
  G.setInterval = (f, ms, ...a) => { const id = ++timerSeq; timerQ.set(id, { f, a, at: Date.now() + (+ms || 0), every: Math.max(1, +ms || 0), seq: id }); return id; };
  G.setImmediate = (f, ...a) => G.setTimeout(f, 0, ...a);
  G.clearTimeout = G.clearInterval = G.clearImmediate = (id) => { timerQ.delete(id); };
  if (typeof G.queueMicrotask === "undefined") G.queueMicrotask = (f) => { Promise.resolve().then(f); };
  if (typeof G.structuredClone === "undefined") G.structuredClone = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

  // What Go calls: the delay to the next timer (-1: none), and firing it.
  const nextTimer = () => {
    let best = null;
    for (const t of timerQ.values()) if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    return best ? Math.max(0, best.at - Date.now()) : -1;
  };
  const fireTimer = () => {
    let best = null, id;
    for (const [k, t] of timerQ) if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) { best = t; id = k; }
    if (!best) return;
    if (best.every) { best.at = Date.now() + best.every; best.seq = ++timerSeq; } else timerQ.delete(id);
    try { best.f(...best.a); } catch (e) { fail(e); }
  };

  // ---- ending the exec
  let settled = false;
  // cleanStack drops the prelude's frames, folds runs of one frame (deep
  // recursion) and keeps the first 30 lines.
  function cleanStack(stack) {
    const lines = String(stack).split("\n").filter((l) => l !== "" && l.indexOf("(<eval>") < 0 && l.indexOf("(native)") < 0);
    const out = [];
    for (let i = 0; i < lines.length;) {
      let j = i;
      while (j < lines.length && lines[j] === lines[i]) j++;
      out.push(lines[i]);
      if (j - i > 2) out.push("    ... " + (j - i - 1) + " more of the same frame");
      else if (j - i === 2) out.push(lines[i]);
      i = j;
    }
    if (out.length > 30) out.splice(30, out.length - 30, "    ... " + (out.length - 30) + " more frames");
    return out.join("\n");
  }
  function describeError(e, inPromise) {
    const uncaught = inPromise ? "Uncaught (in promise) " : "Uncaught ";
    if (e instanceof Error) {
      let s = uncaught + e.name + (e.message !== "" ? ": " + e.message : "");
      const st = e.stack ? cleanStack(e.stack) : "";
      if (st) s += "\n" + st;
      return s;
    }
    return uncaught + inspect(e, 1);
  }
  function fail(e, inPromise) {
    if (settled) return;
    settled = true;
    if (e instanceof ExitSignal) { hostDone("exit", String(e.code)); return; }
    const name = e instanceof Error ? e.name + ": " + e.message : "";
    hostDone("error", describeError(e, inPromise), name);
  }
  function finish(v) {
    if (settled) return;
    settled = true;
    if (v === undefined) { hostDone("ok", undefined, String(G.process.exitCode || 0)); return; }
    let s;
    try { s = JSON.stringify(v); } catch (e) { settled = false; fail(new TypeError("the default export's value cannot be made JSON: " + e.message)); return; }
    hostDone("ok", s, String(G.process.exitCode || 0));
  }
  // run imports the module and settles the exec with its default export:
  // a throw while loading or calling it is "Uncaught", a rejection of the
  // promise it returns (or is) "Uncaught (in promise)"; both exit 1.
  const run = (main, inputJSON) => {
    import(main).then((m) => {
      const f = m.default;
      const input = inputJSON === "" ? null : JSON.parse(inputJSON);
      const v = typeof f === "function" ? f(input, { cwd, env }) : f;
      if (v !== null && (typeof v === "object" || typeof v === "function") && typeof v.then === "function") {
        Promise.resolve(v).then(finish, (e) => fail(e, true));
        return;
      }
      finish(v);
    }).catch((e) => fail(e));
  };

  const hidden = (k, v) => Object.defineProperty(G, k, { value: v, enumerable: false, configurable: false, writable: false });
  hidden("__cfs_modules", { "node:fs/promises": fsPromises, "node:path": path, "computerfs": { glob: fsPromises.glob, grep: fsPromises.grep, fs: fsPromises, path } });
  hidden("__cfs_run", run);
  hidden("__cfs_next_timer", nextTimer);
  hidden("__cfs_fire_timer", fireTimer);
})();
