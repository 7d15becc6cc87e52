//! The globs an operator picks a source's entries by (`include`, `exclude`): over
//! upstream entry names and OpenAPI operation ids alike.

/// A glob over entry names: `*` is any run of bytes, `?` any one byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameGlob(String);

impl NameGlob {
    pub fn new(pattern: impl Into<String>) -> Self {
        Self(pattern.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn matches(&self, name: &str) -> bool {
        let (pattern, name) = (self.0.as_bytes(), name.as_bytes());
        // Iterative matching with one backtrack point: linear in practice, never exponential.
        let (mut p, mut n, mut star, mut resume) = (0, 0, None, 0);
        while n < name.len() {
            match pattern.get(p) {
                Some(b'*') => {
                    star = Some(p);
                    resume = n;
                    p += 1;
                }
                Some(&byte) if byte == b'?' || byte == name[n] => {
                    p += 1;
                    n += 1;
                }
                _ => match star {
                    Some(at) => {
                        p = at + 1;
                        resume += 1;
                        n = resume;
                    }
                    None => return false,
                },
            }
        }
        pattern[p..].iter().all(|&byte| byte == b'*')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        let glob = |pattern: &str, name: &str| NameGlob::new(pattern).matches(name);
        assert!(glob("*", "anything"));
        assert!(glob("*", ""));
        assert!(glob("get-*", "get-env"));
        assert!(!glob("get-*", "xget-env"));
        assert!(glob("*-env", "get-env"));
        assert!(glob("g?t", "get"));
        assert!(!glob("g?t", "gt"));
        assert!(glob("a*b*c", "a-b-b-c"));
        assert!(!glob("a*b*c", "a-b-b-d"));
        assert!(glob("echo", "echo"));
        assert!(!glob("echo", "echo2"));
    }
}
