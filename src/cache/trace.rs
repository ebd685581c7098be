//! The headers NVRTC says it processed (`-fdevice-time-trace`, NVRTC 13.0+): a cross-check of
//! the include scan on every miss, so that a header the scan did not find — a lexer mistake no
//! test has shown yet — keeps the result out of the cache instead of making a stale entry.
//!
//! NVRTC has no dependency output; its time trace (Chrome's JSON trace format) holds one
//! "Processing Header File" event per header it read, with the path as NVRTC formed it in
//! `args.detail`. It says nothing of lookups that found nothing, which is why the key still
//! comes from the scan. This module only reads the trace: a small JSON reader, bounded in size
//! and depth, total on any bytes.

/// The most trace bytes read (CUB's trace is under 1 MB).
pub const MAX_TRACE_BYTES: u64 = 64 << 20;

enum Value {
    Str(String),
    Obj(Vec<(String, Value)>),
    Arr(Vec<Value>),
    Other,
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn ws(&mut self) {
        while self.b.get(self.at).is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn string(&mut self) -> Option<String> {
        if self.b.get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = *self.b.get(self.at)?;
            self.at += 1;
            match c {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' => {
                    let e = *self.b.get(self.at)?;
                    self.at += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let hex = std::str::from_utf8(self.b.get(self.at..self.at + 4)?).ok()?;
                            self.at += 4;
                            let ch = char::from_u32(u32::from_str_radix(hex, 16).ok()?).unwrap_or('\u{fffd}');
                            out.extend_from_slice(ch.to_string().as_bytes());
                        }
                        _ => return None,
                    }
                }
                _ => out.push(c),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > 64 {
            return None;
        }
        self.ws();
        match *self.b.get(self.at)? {
            b'"' => self.string().map(Value::Str),
            b'{' => {
                self.at += 1;
                let mut v = Vec::new();
                loop {
                    self.ws();
                    if self.b.get(self.at) == Some(&b'}') {
                        self.at += 1;
                        return Some(Value::Obj(v));
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.b.get(self.at) != Some(&b':') {
                        return None;
                    }
                    self.at += 1;
                    v.push((k, self.value(depth + 1)?));
                    self.ws();
                    match self.b.get(self.at)? {
                        b',' => self.at += 1,
                        b'}' => {}
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut v = Vec::new();
                loop {
                    self.ws();
                    if self.b.get(self.at) == Some(&b']') {
                        self.at += 1;
                        return Some(Value::Arr(v));
                    }
                    v.push(self.value(depth + 1)?);
                    self.ws();
                    match self.b.get(self.at)? {
                        b',' => self.at += 1,
                        b']' => {}
                        _ => return None,
                    }
                }
            }
            _ => {
                // Numbers, true, false, null: not needed, only skipped.
                let start = self.at;
                while self.b.get(self.at).is_some_and(|c| !b",]} \t\r\n".contains(c)) {
                    self.at += 1;
                }
                (self.at > start).then_some(Value::Other)
            }
        }
    }
}

/// The header paths a trace names, in its order; None if it is not such a trace.
pub fn headers_in_trace(json: &[u8]) -> Option<Vec<String>> {
    let mut r = Reader { b: json, at: 0 };
    let Value::Obj(top) = r.value(0)? else { return None };
    let Some((_, Value::Arr(events))) = top.into_iter().find(|(k, _)| k == "traceEvents") else { return None };
    let mut out = Vec::new();
    for e in events {
        let Value::Obj(fields) = e else { continue };
        let is_header =
            fields.iter().any(|(k, v)| k == "name" && matches!(v, Value::Str(s) if s == "Processing Header File"));
        if !is_header {
            continue;
        }
        for (k, v) in fields {
            if let (true, Value::Obj(args)) = (k == "args", v) {
                for (ak, av) in args {
                    if let (true, Value::Str(d)) = (ak == "detail", av) {
                        out.push(d);
                    }
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_header_events_and_refuses_garbage() {
        let t = br#"{"otherData":{"isNVRTC":1},"traceEvents":[{},
            {"args":{"detail":"f(int)"},"dur":3,"name":"Scanning Function Body","ph":"X"},
            {"args":{"detail":"inc/sub/y.h"},"dur":21,"name":"Processing Header File","ph":"X","ts":1.5e3},
            {"name":"Processing Header File","args":{"detail":"/abs/with \"quote\" \u00e9.h"}},
            {"args":{"detail":"prog.cu"},"name":"CUDA C++ Front-End"}]}"#;
        assert_eq!(
            headers_in_trace(t).unwrap(),
            vec!["inc/sub/y.h".to_string(), "/abs/with \"quote\" é.h".to_string()]
        );
        for cut in 0..t.len() {
            let _ = headers_in_trace(&t[..cut]);
        }
        assert!(headers_in_trace(b"[1,2]").is_none());
        assert!(headers_in_trace(&[b'['; 10_000]).is_none(), "deep nesting is refused, not a stack overflow");
    }
}
