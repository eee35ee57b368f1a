//! Kubernetes' CEL libraries, evaluated as policy expressions are (upstream's
//! `pkg/cel/library/*_test.go` cases), and their costs.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::authz::{Check, authorizer};
use crate::{
    authn::UserInfo,
    authz::{Attributes, Decision, ResourceAttributes},
    custom::rules::{
        Budget, PER_CALL_LIMIT, cost,
        expression::{Expression, Outcome, evaluate},
        shape::Bound,
    },
};

fn eval_with(src: &str, vars: &[(&str, &Value)]) -> Result<Outcome, String> {
    let e = Expression::compile(src)?;
    evaluate(&e, vars, &mut Budget::default())
}

fn eval(src: &str) -> Result<Outcome, String> {
    eval_with(src, &[])
}

#[track_caller]
fn holds(src: &str) {
    assert_eq!(eval(src), Ok(Outcome::Bool(true)), "{src}");
}

#[track_caller]
fn fails(src: &str, message: &str) {
    match eval(src) {
        Err(e) => assert!(e.contains(message), "{src}: {e:?} lacks {message:?}"),
        Ok(v) => panic!("{src}: {v:?}, not an error"),
    }
}

#[test]
fn lists() {
    for src in [
        "[].isSorted()",
        "[1, 2, 2, 3].isSorted()",
        "!([1, 3, 2].isSorted())",
        "['a', 'b', 'c'].isSorted()",
        "!(['b', 'a'].isSorted())",
        "[1.0, 2.5].isSorted()",
        "[false, true].isSorted()",
        "[].sum() == 0",
        "[1, 2, 3].sum() == 6",
        "[1u, 2u].sum() == 3u",
        "[1.5, 2.5].sum() == 4.0",
        "[3, 1, 2].min() == 1",
        "[3, 1, 2].max() == 3",
        "['b', 'a', 'c'].min() == 'a'",
        "['b', 'a', 'c'].max() == 'c'",
        "[1].min() == 1",
        "[1, 2, 3, 2].indexOf(2) == 1",
        "[1, 2, 3, 2].lastIndexOf(2) == 3",
        "[1, 2, 3].indexOf(4) == -1",
        "[].lastIndexOf(1) == -1",
        "[[1], [2]].indexOf([2]) == 1",
        "['a', 'b'].indexOf('b') == 1",
        "[1, 2].includes(2) && !([1, 2].includes(3))",
        "(1).includes(1)",
        // The strings extension's indexOf is still there for strings.
        "'abcb'.indexOf('b') == 1 && 'abcb'.lastIndexOf('b') == 3",
    ] {
        holds(src);
    }
    fails("[].min()", "min called on empty list");
    fails("[].max()", "max called on empty list");
    fails("[{'a': 1}].isSorted()", "isSorted");
    fails("[1, 'a'].sum()", "sum");
    fails("[9223372036854775807, 1].sum()", "integer overflow");
    // Lists of the object.
    let v = json!({"l": [3, 5, 1], "names": ["b", "a"]});
    assert_eq!(
        eval_with(
            "object.l.max() == 5 && object.l.sum() == 9 && object.names.min() == 'a'",
            &[("object", &v)]
        ),
        Ok(Outcome::Bool(true))
    );
}

#[test]
fn regex() {
    for src in [
        "'abc 123 def 123'.find('[0-9]+') == '123'",
        "'abc'.find('[0-9]+') == ''",
        "'abc 123 def 456'.findAll('[0-9]+') == ['123', '456']",
        "'abc 123 def 456'.findAll('[0-9]+', 1) == ['123']",
        "'abc 123 def 456'.findAll('[0-9]+', 0) == []",
        "'abc 123 def 456'.findAll('[0-9]+', -1) == ['123', '456']",
        "'abc'.findAll('x') == []",
        // Go's meaning: \\d is ASCII.
        "'٨٠ 12'.find('\\\\d+') == '12'",
    ] {
        holds(src);
    }
    fails("'abc'.find('[')", "Illegal regex");
    fails("'abc'.findAll('a{1001}')", "Illegal regex");
}

#[test]
fn urls() {
    for src in [
        "url('https://example.com/path?query=val#fragment').getScheme() == 'https'",
        "url('https://example.com:8080/path').getHost() == 'example.com:8080'",
        "url('https://example.com:8080/path').getHostname() == 'example.com'",
        "url('https://example.com:8080/path').getPort() == '8080'",
        "url('https://example.com/path').getPort() == ''",
        "url('https://[::1]:80/path').getHostname() == '::1'",
        "url('https://[::1]:80/path').getHost() == '[::1]:80'",
        "url('https://[::1]/path').getHostname() == '::1'",
        "url('https://example.com/with space').getEscapedPath() == '/with%20space'",
        "url('https://example.com/a%2Fb').getEscapedPath() == '/a%2Fb'",
        "url('https://example.com/path').getEscapedPath() == '/path'",
        "url('/absolute/path').getScheme() == '' && url('/absolute/path').getEscapedPath() == '/absolute/path'",
        "url('https://example.com/?k=v&k=w&x=1+2&y=%41').getQuery() == {'k': ['v', 'w'], 'x': ['1 2'], 'y': ['A']}",
        "url('https://example.com/').getQuery() == {}",
        "url('HTTPS://example.com').getScheme() == 'https'",
        "url('mailto:someone@example.com').getScheme() == 'mailto'",
        "url('https://user:pass@example.com/').getHost() == 'example.com'",
        "url('https://example.com') == url('https://example.com')",
        "url('https://example.com') != url('https://example.org')",
        "isURL('https://example.com/path')",
        "isURL('/path')",
        "!isURL('example.com')",
        "!isURL('')",
        "!isURL('../relative')",
        "!isURL('https://example.com:port/')",
        "!isURL('https://exa mple.com/')",
        "!isURL('https://example.com/%zz')",
        "type(url('/a')) == kubernetes.URL",
    ] {
        holds(src);
    }
    fails(
        "url('example.com')",
        "URL parse error during conversion from string: parse \"example.com\": invalid URI for request",
    );
    fails("url('://x')", "parse \"://x\": missing protocol scheme");
    fails(
        "url('https://example.com:port/')",
        "invalid port \":port\" after host",
    );
    fails("url('https://[::1/')", "missing ']' in host");
    fails("url('/a%zz')", "invalid URL escape \"%zz\"");
    fails(
        "url('https://a b/')",
        "invalid character \" \" in host name",
    );
}

#[test]
fn quantities() {
    for src in [
        "quantity('12Mi') == quantity('12582912')",
        "isQuantity('20') && isQuantity('20M') && isQuantity('20Mi')",
        "!isQuantity('20Mo') && !isQuantity('10Mm')",
        "quantity('200M') == quantity('200M')",
        "quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')",
        "quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M')",
        "quantity('200M') != quantity('0.3G')",
        "quantity('50M').isLessThan(quantity('50Mi'))",
        "quantity('50M').isLessThan(quantity('100M'))",
        "!quantity('100M').isLessThan(quantity('50M'))",
        "quantity('50Mi').isGreaterThan(quantity('50M'))",
        "quantity('150Mi').isGreaterThan(quantity('100Mi'))",
        "!quantity('50M').isGreaterThan(quantity('100M'))",
        "quantity('200M').compareTo(quantity('0.2G')) == 0",
        "quantity('50M').compareTo(quantity('50Mi')) == -1",
        "quantity('50Mi').compareTo(quantity('50M')) == 1",
        "quantity('50k').add(quantity('20')) == quantity('50.02k')",
        "quantity('50k').add(20).isLessThan(quantity('50021'))",
        "quantity('50k').sub(quantity('20')) == quantity('49.98k')",
        "quantity('50k').sub(20) == quantity('49980')",
        "quantity('50k').add(20).sub(quantity('100k')).asInteger() == -49980",
        "quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger() == 20",
        "quantity('50k').asInteger() == 50000",
        "quantity('50').isInteger()",
        "!quantity('1.5').isInteger()",
        "quantity('50.703k').asApproximateFloat() == 50703.0",
        "sign(quantity('-1')) == -1 && sign(quantity('0')) == 0 && sign(quantity('2m')) == 1",
        "type(quantity('1')) == kubernetes.Quantity",
    ] {
        holds(src);
    }
    fails(
        "quantity('10Mo')",
        "quantities must match the regular expression",
    );
    fails("quantity('10Mm')", "unable to parse quantity's suffix");
    fails(
        "quantity('1.5').asInteger()",
        "cannot convert value to integer",
    );
    // Beyond what the project's quantities hold (upstream's are unbounded).
    fails(
        "quantity('9999999999999999999999999999999999999G')",
        "quantity is too large",
    );
}

#[test]
fn ips() {
    for src in [
        "ip('192.168.0.1') == ip('192.168.0.1')",
        "isIP('192.168.0.1') && !isIP('192.168.0.1.0')",
        "ip.isCanonical('127.0.0.1')",
        "ip('192.168.0.1').family() == 4",
        "ip('0.0.0.0').isUnspecified() && !ip('127.0.0.1').isUnspecified()",
        "ip('127.0.0.1').isLoopback() && !ip('1.2.3.4').isLoopback()",
        "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast()",
        "ip('169.254.169.254').isLinkLocalUnicast() && !ip('192.168.0.1').isLinkLocalUnicast()",
        "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()",
        "ip('2001:db8::68') == ip('2001:db8::68')",
        "isIP('2001:db8::68') && !isIP('2001:db8:::68')",
        "ip.isCanonical('2001:db8::68') && !ip.isCanonical('2001:DB8::68')",
        "ip('2001:db8::68').family() == 6",
        "ip('::').isUnspecified() && !ip('::1').isUnspecified()",
        "ip('::1').isLoopback() && !ip('2001:db8::abcd').isLoopback()",
        "ip('ff02::1').isLinkLocalMulticast() && !ip('fd00::1').isLinkLocalMulticast()",
        "ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()",
        "ip('2001:db8::abcd').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()",
        "string(ip('192.168.0.1')) == '192.168.0.1'",
        "string(ip('2001:DB8:0:0::1')) == '2001:db8::1'",
        "type(ip('192.168.0.1')) == net.IP",
        "!isIP('::ffff:1.2.3.4') && !isIP('fe80::1%eth0') && !isIP('01.2.3.4')",
    ] {
        holds(src);
    }
    fails(
        "ip('192.168.0.1.0')",
        "IP Address \"192.168.0.1.0\" parse error during conversion from string: ParseAddr(\"192.168.0.1.0\"): IPv4 address too long",
    );
    fails(
        "ip.isCanonical('127.0.0.1.0')",
        "ParseAddr(\"127.0.0.1.0\"): IPv4 address too long",
    );
    fails("ip('1.2.3.256')", "IPv4 field has value >255");
    fails("ip('1.2.3')", "IPv4 address too short");
    fails("ip('1.2.x.4')", "unexpected character (at \"x.4\")");
    fails(
        "ip('2001:db8:::68')",
        "IP Address \"2001:db8:::68\" parse error during conversion from string: ParseAddr(\"2001:db8:::68\")",
    );
    fails(
        "ip('::ffff:1.2.3.4')",
        "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed",
    );
    fails(
        "ip('fe80::1%eth0')",
        "IP address \"fe80::1%eth0\" with zone value is not allowed",
    );
    fails("isIP(cidr('192.168.0.0/24'))", "isIP");
}

#[test]
fn cidrs() {
    for src in [
        "cidr('192.168.0.0/24') == cidr('192.168.0.0/24')",
        "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))",
        "!cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))",
        "cidr('192.168.0.0/24').containsIP('192.168.0.1')",
        "!cidr('192.168.0.0/24').containsIP('192.168.1.1')",
        "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))",
        "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.1/32'))",
        "!cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/23'))",
        "!cidr('192.168.0.0/24').containsCIDR(cidr('192.169.0.1/32'))",
        "cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')",
        "!cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')",
        "cidr('192.168.0.0/24').ip() == ip('192.168.0.0')",
        "cidr('192.168.0.1/24').ip() == ip('192.168.0.1')",
        "cidr('192.168.0.0/24').masked() == cidr('192.168.0.0/24')",
        "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
        "cidr('192.168.0.0/24').prefixLength() == 24",
        "cidr('2001:db8::/32').containsIP(ip('2001:db8::1'))",
        "!cidr('2001:db8::/32').containsIP(ip('2001:dc8::1'))",
        "cidr('2001:db8::/32').containsIP('2001:db8::1')",
        "cidr('2001:db8::/32').containsCIDR(cidr('2001:db8::/33'))",
        "!cidr('2001:db8::/32').containsCIDR(cidr('2001:db8::/31'))",
        "cidr('2001:db8::/32').containsCIDR('2001:db8::/33')",
        "cidr('2001:db8::/32').ip() == ip('2001:db8::')",
        "cidr('2001:db8:1::/32').masked() == cidr('2001:db8::/32')",
        "cidr('2001:db8::/32').prefixLength() == 32",
        "!cidr('0.0.0.0/0').containsIP(ip('::1'))",
        "cidr('0.0.0.0/0').containsIP(ip('8.8.8.8'))",
        "string(cidr('192.168.0.0/24')) == '192.168.0.0/24'",
        "string(cidr('192.168.0.1/24')) == '192.168.0.1/24'",
        "type(cidr('192.168.0.0/24')) == net.CIDR",
        "isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0/33') && !isCIDR('10.0.0.0/08') && !isCIDR('10.0.0.0')",
    ] {
        holds(src);
    }
    fails(
        "cidr('192.168.0.0/')",
        "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"192.168.0.0/\"): bad bits after slash: \"\"",
    );
    fails(
        "cidr('2001:db8::/')",
        "netip.ParsePrefix(\"2001:db8::/\"): bad bits after slash: \"\"",
    );
    fails("cidr('10.0.0.0/33')", "prefix length out of range");
    fails("cidr('10.0.0.0')", "no '/'");
    fails(
        "cidr('::ffff:1.2.3.4/96')",
        "IPv4-mapped IPv6 address \"::ffff:1.2.3.4/96\" is not allowed",
    );
    fails(
        "cidr('10.0.0.0/8').containsIP('10.0.0')",
        "IPv4 address too short",
    );
}

#[test]
fn strings_and_sets() {
    for src in [
        "'hello'.charAt(1) == 'e'",
        "'TacoCat'.lowerAscii() == 'tacocat' && 'TacoCat'.upperAscii() == 'TACOCAT'",
        "'  a  '.trim() == 'a'",
        "'abc'.replace('b', 'x') == 'axc' && 'aaa'.replace('a', 'b', 2) == 'bba'",
        "'a,b,c'.split(',') == ['a', 'b', 'c'] && 'a,b,c'.split(',', 2) == ['a', 'b,c']",
        "'abcdef'.substring(2) == 'cdef' && 'abcdef'.substring(1, 3) == 'bc'",
        "['a', 'b'].join() == 'ab' && ['a', 'b'].join('-') == 'a-b'",
        "strings.quote('a\"b') == '\"a\\\\\"b\"'",
        "'abc'.reverse() == 'cba'",
        "'%s is %d'.format(['x', 3]) == 'x is 3'",
        "sets.contains([1, 2, 3], [2, 3]) && !sets.contains([1, 2], [3])",
        "sets.contains([1, 2], [])",
        "sets.equivalent([1, 2, 2], [2, 1]) && !sets.equivalent([1], [1, 2])",
        "sets.intersects([1, 2], [2, 3]) && !sets.intersects([1], [2])",
        "sets.contains([1], [1.0])",
    ] {
        holds(src);
    }
}

/// A fake authorizer: allows what `allow` says, records what it was asked.
struct Fake {
    asked: Mutex<Vec<(String, Attributes)>>,
}

impl Check for Fake {
    fn check(&self, user: &UserInfo, attrs: &Attributes) -> (Decision, String) {
        if let Ok(mut asked) = self.asked.lock() {
            asked.push((user.name.clone(), attrs.clone()));
        }
        let allowed = match attrs {
            Attributes::Resource(r) => r.resource == "endpoints" && r.verb == "create",
            Attributes::NonResource { path, verb } => path == "/healthz" && verb == "get",
        };
        if allowed {
            (Decision::Allow, "fake allows it".into())
        } else {
            (Decision::NoOpinion, "fake has no opinion".into())
        }
    }
}

/// Evaluates `src` with `authorizer` bound for `user` (a resource request for `request`).
fn with_authorizer(
    checker: &Arc<Fake>,
    request: Option<ResourceAttributes>,
    src: &str,
) -> Result<cel::Value, String> {
    let program = cel::Program::compile(src).map_err(|e| e.to_string())?;
    let mut ctx = cel::Context::with_env(super::super::ENV.clone());
    let user = UserInfo {
        name: "alice".into(),
        ..Default::default()
    };
    ctx.add_variable_as_val("authorizer", authorizer(checker.clone(), user, request));
    program.execute(&ctx).map_err(|e| e.to_string())
}

#[test]
fn authorizer_checks_through_the_server() {
    let fake = Arc::new(Fake {
        asked: Mutex::new(Vec::new()),
    });
    let t = cel::Value::Bool(true);
    for src in [
        "authorizer.group('').resource('endpoints').check('create').allowed()",
        "!authorizer.group('').resource('endpoints').check('delete').allowed()",
        "authorizer.group('').resource('endpoints').check('create').reason() == 'fake allows it'",
        "!authorizer.group('').resource('pods').check('create').errored()",
        "authorizer.group('').resource('pods').check('create').error() == ''",
        "authorizer.path('/healthz').check('get').allowed()",
        "!authorizer.path('/readyz').check('get').allowed()",
        "authorizer.serviceAccount('default', 'builder').group('').resource('endpoints').check('create').allowed()",
    ] {
        assert_eq!(with_authorizer(&fake, None, src), Ok(t.clone()), "{src}");
    }
    let rc = "authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns').name('web').check('update').allowed()";
    assert_eq!(
        with_authorizer(&fake, None, rc),
        Ok(cel::Value::Bool(false))
    );
    let asked = fake.asked.lock().map(|a| a.clone()).unwrap_or_default();
    let last = asked.last().cloned();
    assert_eq!(
        last,
        Some((
            "alice".to_string(),
            Attributes::Resource(ResourceAttributes {
                verb: "update".into(),
                group: "apps".into(),
                version: "*".into(),
                resource: "deployments".into(),
                subresource: "scale".into(),
                namespace: "ns".into(),
                name: "web".into(),
            })
        ))
    );
    assert!(
        asked
            .iter()
            .any(|(u, _)| u == "system:serviceaccount:default:builder"),
        "{asked:?}"
    );
    assert!(
        asked.iter().any(|(_, a)| matches!(a, Attributes::NonResource { path, verb } if path == "/healthz" && verb == "get")),
    );

    // Bad arguments, in upstream's words.
    for (src, message) in [
        ("authorizer.path('').check('get')", "path must not be empty"),
        (
            "authorizer.group('').resource(' ').check('get')",
            "resource must not be empty",
        ),
        (
            "authorizer.serviceAccount('default', 'Bad_Name')",
            "Invalid service account name",
        ),
        (
            "authorizer.serviceAccount('bad.namespace', 'sa')",
            "Invalid service account namespace",
        ),
    ] {
        match with_authorizer(&fake, None, src) {
            Err(e) => assert!(e.contains(message), "{src}: {e}"),
            Ok(v) => panic!("{src}: {v:?}"),
        }
    }

    // The request's own resource.
    let request = ResourceAttributes::new("create", "", "v1", "endpoints").at("ns", "e");
    assert_eq!(
        with_authorizer(
            &fake,
            Some(request),
            "authorizer.requestResource.check('create').allowed()"
        ),
        Ok(t.clone())
    );
    let asked = fake.asked.lock().map(|a| a.clone()).unwrap_or_default();
    assert!(matches!(
        asked.last(),
        Some((_, Attributes::Resource(r))) if r.namespace == "ns" && r.name == "e" && r.resource == "endpoints"
    ));
    assert!(with_authorizer(&fake, None, "authorizer.requestResource.check('create')").is_err());
}

/// The runtime bound of `src` with `s` bound to `value`.
fn runtime_cost(src: &str, value: &Value) -> u64 {
    let program = cel::Program::compile(src).expect("compiles");
    cost::Estimator::of_vars(&[("s", value)]).cost(program.expression())
}

/// Upstream's estimate of `src` on literals.
fn static_cost(src: &str) -> u64 {
    let program = cel::Program::compile(src).expect("compiles");
    cost::Estimator::of_schema(Bound::scalar()).cost(program.expression())
}

#[test]
fn library_calls_are_charged_by_size() {
    // Upstream's estimates (`library/cost_test.go`).
    for (src, expected) in [
        ("'ABCDEFGHIJ abcdefghij'.lowerAscii()", 3),
        ("'ABCDEFGHIJ abcdefghij'.upperAscii()", 3),
        ("'abc 123 def 123'.replace('123', '456')", 3),
        ("'abc 123 def 123'.split(' ')", 3),
        ("'abc 123 def 123'.substring(5)", 2),
        ("'abc 123 def 123'.find('123')", 2),
        ("'abc 123 def 123'.findAll('123')", 2),
        (
            "authorizer.path('/healthz').check('get').allowed()",
            350_003,
        ),
    ] {
        assert_eq!(static_cost(src), expected, "{src}");
    }
    let tiny = json!("a,b");
    let huge = json!("a,".repeat(100_000));
    for src in [
        "s.split(',').size() > 0",
        "s.findAll('[a-z]').size() > 0",
        "s.lowerAscii() != ''",
        "s.replace(',', ';') != ''",
        "s.indexOf(',') >= 0",
        "url('/' + s).getEscapedPath() != ''",
        "isQuantity(s)",
        "isIP(s) || isCIDR(s)",
        "sets.contains(s.split(','), ['a'])",
        "s.split(',').join('-') != ''",
        "s.split(',').isSorted()",
        "authorizer.group(s) == authorizer.group(s)",
    ] {
        let (small, large) = (runtime_cost(src, &tiny), runtime_cost(src, &huge));
        assert!(large > small * 1000, "{src}: {small} vs {large}");
    }
}

#[test]
fn no_chain_of_calls_outgrows_its_bound() {
    let s = json!("a".repeat(1000));
    // Each replacement squares the string: the second would build 10^12 characters.
    let chain = "s.replace('a', s).replace('a', s.replace('a', s)) != ''";
    assert!(runtime_cost(chain, &s) > PER_CALL_LIMIT);
    assert_eq!(
        eval_with(chain, &[("s", &s)]),
        Err("operation cancelled: actual cost limit exceeded".into())
    );
    // One replacement of a short string runs.
    let short = json!("abc");
    assert_eq!(
        eval_with("s.replace('b', s) == 'aabcc'", &[("s", &short)]),
        Ok(Outcome::Bool(true))
    );
    // Joining with a separator built by joining: bounded by the items and separators.
    let list = json!(vec!["a".repeat(1000); 100]);
    assert!(runtime_cost("s.join(s.join('')).size() > 0", &list) > PER_CALL_LIMIT);
    // A macro's variable named after a namespace does not hide the namespace's function
    // from the estimate: the crate calls `strings.quote` when no method of the variable
    // applies, and each quote of backslashes doubles them.
    let mut quoted = "strings.quote('\\\\')".to_string();
    for _ in 0..35 {
        quoted = format!("strings.quote({quoted})");
    }
    let shadowed = format!("[0].all(strings, {quoted}.size() > 0)");
    // Deep nesting wants the stack rules run with (`offload`), not a test thread's.
    let refused = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || eval_with(&shadowed, &[]))
        .expect("thread")
        .join()
        .expect("evaluated");
    assert_eq!(
        refused,
        Err("operation cancelled: actual cost limit exceeded".into())
    );
    let big = json!((0..5000).collect::<Vec<_>>());
    assert!(
        runtime_cost("[0].all(sets, sets.intersects(s, s))", &big)
            >= runtime_cost("sets.intersects(s, s)", &big)
    );
    // Formatting a list prints it whole.
    let many = json!(vec!["x".repeat(100); 1000]);
    assert!(
        runtime_cost("'%s'.format([s])", &many)
            > runtime_cost("'%s'.format([s])", &json!([])) + 10_000
    );
}

#[test]
fn rules_see_the_libraries() {
    use crate::custom::rules::tests::{eval, rule};
    let r = rule(json!({
        "rule": "quantity(self.limit).isGreaterThan(quantity(self.request)) && isURL(self.endpoint) && self.tags.isSorted()",
    }));
    let ok =
        json!({"limit": "2Gi", "request": "1G", "endpoint": "https://x/y", "tags": ["a", "b"]});
    assert!(eval(&r, &ok, None, &mut Budget::default()).is_empty());
    let bad =
        json!({"limit": "1G", "request": "2Gi", "endpoint": "https://x/y", "tags": ["a", "b"]});
    assert_eq!(eval(&r, &bad, None, &mut Budget::default()).len(), 1);
}
