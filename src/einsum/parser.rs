//! Parses the tokens of one einsum statement into a syntax tree whose nodes
//! keep their source spans; [`super::bind`] then resolves names and builds
//! the IR.
//!
//! ```text
//! statement := name ('[' (name (',' name)*)? ']')? '=' expr
//! expr      := and ('or' and)*
//! and       := cmp ('and' cmp)*
//! cmp       := sum (('=' | '==' | '<>' | '!=' | '<' | '<=' | '>' | '>=') sum)*
//! sum       := product (('+' | '-') product)*
//! product   := unary (('*' | '/') unary)*
//! unary     := '-' unary | primary
//! primary   := number | 'true' | 'false' | '(' expr ')'
//!            | AGG '(' name (',' name)* ')' expr     -- AGG: SUM MAX MIN COUNT ANY
//!            | function '(' expr (',' expr)* ')'
//!            | name ('.' name)? ('[' (term (',' term)*)? ']')?
//! term      := name | integer | 'string'
//! ```
//!
//! An aggregate's body is a whole expression: `SUM(j) A[i,j] * B[j] + 1`
//! sums `A[i,j] * B[j] + 1`; it extends to the closing parenthesis around
//! it or the end of the statement. A `-` directly before a number makes a
//! negative literal. Parentheses, aggregates, calls and prefix `-` may nest
//! at most [`MAX_DEPTH`] deep, so that hostile text gets a syntax error
//! instead of exhausting the stack.

use std::ops::Range;

use super::lexer::{Token, TokenKind};
use super::located;
use crate::error::{Error, Result};
use crate::ir::{AggOp, ScalarOp, Value};

/// A name and where it is written.
#[derive(Clone, Debug, PartialEq)]
pub struct Name {
    /// The name.
    pub name: String,
    /// Its span in the source.
    pub span: Range<usize>,
}

/// The column name that `tensor.*[...]` (the table's row count at a
/// coordinate) parses to.
pub const ROWS: &str = "*";

/// One einsum statement: `output[indices] = expr`.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// The output tensor.
    pub output: Name,
    /// The output indices.
    pub indices: Vec<Name>,
    /// The right-hand side.
    pub expr: Ast,
}

/// A node of the syntax tree with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Ast {
    /// What it is.
    pub kind: AstKind,
    /// Where it is.
    pub span: Range<usize>,
}

/// The kinds of syntax-tree nodes.
#[derive(Clone, Debug, PartialEq)]
pub enum AstKind {
    /// A number or boolean.
    Literal(Value),
    /// `tensor.column[terms]`; `terms` is `None` when no brackets are written.
    Access {
        tensor: Name,
        column: Option<Name>,
        terms: Option<Vec<Term>>,
    },
    /// An infix or prefix operator.
    Operator { op: ScalarOp, args: Vec<Ast> },
    /// A function call, by name (resolved by the binder).
    Call { function: Name, args: Vec<Ast> },
    /// `AGG(indices) body`.
    Aggregate {
        op: AggOp,
        indices: Vec<Name>,
        body: Box<Ast>,
    },
}

/// An index term as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    /// An index variable.
    Var(Name),
    /// An integer coordinate.
    Int(i64, Range<usize>),
    /// A string key.
    Str(String, Range<usize>),
}

/// Parses `tokens` (of `source`) as one statement.
pub fn parse_statement(source: &str, tokens: &[Token], end: usize) -> Result<Statement> {
    let mut parser = Parser {
        source,
        tokens,
        at: 0,
        end,
        depth: 0,
    };
    let output = parser.name("the name of the output tensor")?;
    let mut indices = Vec::new();
    if parser.eat("[") && !parser.eat("]") {
        loop {
            indices.push(parser.name("an output index")?);
            if parser.eat("]") {
                break;
            }
            parser.expect(",", "',' or ']' after an output index")?;
        }
    }
    parser.expect("=", "'=' after the output")?;
    let expr = parser.expr()?;
    if let Some(token) = parser.peek() {
        return Err(parser.error_at(
            token.span.clone(),
            "unexpected text after the expression (statements end with ';')",
        ));
    }
    Ok(Statement {
        output,
        indices,
        expr,
    })
}

struct Parser<'a> {
    source: &'a str,
    tokens: &'a [Token],
    at: usize,
    /// The byte offset where the statement ends (for "unexpected end").
    end: usize,
    /// How many nested expressions and prefix `-` enclose the current one.
    depth: usize,
}

/// How deep expressions may nest (parentheses, aggregate bodies, function
/// arguments, prefix `-`).
pub const MAX_DEPTH: usize = 256;

const COMPARISONS: [(&str, ScalarOp); 8] = [
    ("=", ScalarOp::Eq),
    ("==", ScalarOp::Eq),
    ("<>", ScalarOp::Ne),
    ("!=", ScalarOp::Ne),
    ("<", ScalarOp::Lt),
    ("<=", ScalarOp::Le),
    (">", ScalarOp::Gt),
    (">=", ScalarOp::Ge),
];

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Token> {
        self.tokens.get(self.at + ahead)
    }

    fn eat(&mut self, symbol: &str) -> bool {
        let found = self.peek().is_some_and(|t| t.is(symbol));
        if found {
            self.at += 1;
        }
        found
    }

    /// The span of the previous token's end (for spans of whole nodes).
    fn last_end(&self) -> usize {
        self.at
            .checked_sub(1)
            .and_then(|p| self.tokens.get(p))
            .map_or(self.end, |t| t.span.end)
    }

    fn error_at(&self, span: Range<usize>, message: &str) -> Error {
        located(self.source, span, Error::Syntax(message.to_string()))
    }

    /// An error saying `what` was expected at the current token.
    fn expected(&self, what: &str) -> Error {
        match self.peek() {
            Some(token) => self.error_at(
                token.span.clone(),
                &format!("expected {what}, found {}", describe(token)),
            ),
            None => self.error_at(
                self.end..self.end,
                &format!("expected {what}, found the end of the statement"),
            ),
        }
    }

    fn expect(&mut self, symbol: &str, what: &str) -> Result<()> {
        if self.eat(symbol) {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    fn name(&mut self, what: &str) -> Result<Name> {
        match self.peek() {
            Some(Token {
                kind: TokenKind::Ident { name, quoted },
                span,
            }) if *quoted || !is_keyword(name) => {
                let name = Name {
                    name: name.clone(),
                    span: span.clone(),
                };
                self.at += 1;
                Ok(name)
            }
            _ => Err(self.expected(what)),
        }
    }

    fn expr(&mut self) -> Result<Ast> {
        self.nested(|parser| parser.infix(0))
    }

    /// Runs `parse` one nesting level deeper, failing at the current token
    /// when that exceeds [`MAX_DEPTH`].
    fn nested(&mut self, parse: impl FnOnce(&mut Self) -> Result<Ast>) -> Result<Ast> {
        if self.depth >= MAX_DEPTH {
            let span = self.peek().map_or(self.end..self.end, |t| t.span.clone());
            return Err(self.error_at(
                span,
                &format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
            ));
        }
        self.depth += 1;
        let result = parse(self);
        self.depth -= 1;
        result
    }

    /// Parses operators of precedence level `level` and tighter.
    fn infix(&mut self, level: usize) -> Result<Ast> {
        if level == 5 {
            return self.unary();
        }
        let start = self.peek().map_or(self.end, |t| t.span.start);
        let mut left = self.infix(level + 1)?;
        // Each operator of a chain nests the tree one level deeper on the
        // left (`a + b + c` is `(a + b) + c`), so it counts towards the
        // limit. (No need to restore the depth on errors: they end the parse.)
        let outer = self.depth;
        while let Some(op) = self.infix_operator(level) {
            self.at += 1;
            let right = self.nested(|parser| parser.infix(level + 1))?;
            left = Ast {
                kind: AstKind::Operator {
                    op,
                    args: vec![left, right],
                },
                span: start..self.last_end(),
            };
            self.depth += 1;
        }
        self.depth = outer;
        Ok(left)
    }

    /// The operator of precedence `level` at the current token, if any.
    fn infix_operator(&self, level: usize) -> Option<ScalarOp> {
        let token = self.peek()?;
        match level {
            0 => token.is_keyword("or").then_some(ScalarOp::Or),
            1 => token.is_keyword("and").then_some(ScalarOp::And),
            2 => COMPARISONS
                .iter()
                .find(|(s, _)| token.is(s))
                .map(|(_, op)| *op),
            3 => [("+", ScalarOp::Add), ("-", ScalarOp::Sub)]
                .iter()
                .find(|(s, _)| token.is(s))
                .map(|(_, op)| *op),
            _ => [("*", ScalarOp::Mul), ("/", ScalarOp::Div)]
                .iter()
                .find(|(s, _)| token.is(s))
                .map(|(_, op)| *op),
        }
    }

    fn unary(&mut self) -> Result<Ast> {
        let Some(token) = self.peek().cloned() else {
            return Err(self.expected("an expression"));
        };
        if !token.is("-") {
            return self.primary();
        }
        self.at += 1;
        let negative = match self.peek().map(|t| &t.kind) {
            Some(TokenKind::Int(i)) => Some(Value::Int(-i)),
            Some(TokenKind::Float(x)) => Some(Value::Float(-x)),
            _ => None,
        };
        if let Some(value) = negative {
            self.at += 1;
            return Ok(Ast {
                kind: AstKind::Literal(value),
                span: token.span.start..self.last_end(),
            });
        }
        let operand = self.nested(Self::unary)?;
        Ok(Ast {
            span: token.span.start..operand.span.end,
            kind: AstKind::Operator {
                op: ScalarOp::Neg,
                args: vec![operand],
            },
        })
    }

    fn primary(&mut self) -> Result<Ast> {
        let Some(token) = self.peek().cloned() else {
            return Err(self.expected("an expression"));
        };
        let literal = match &token.kind {
            TokenKind::Int(i) => Some(Value::Int(*i)),
            TokenKind::Float(x) => Some(Value::Float(*x)),
            _ if token.is_keyword("true") => Some(Value::Bool(true)),
            _ if token.is_keyword("false") => Some(Value::Bool(false)),
            _ => None,
        };
        if let Some(value) = literal {
            self.at += 1;
            return Ok(Ast {
                kind: AstKind::Literal(value),
                span: token.span,
            });
        }
        if self.eat("(") {
            let inner = self.expr()?;
            self.expect(")", "')'")?;
            return Ok(Ast {
                kind: inner.kind,
                span: token.span.start..self.last_end(),
            });
        }
        let name = self.name("an expression")?;
        let unquoted = matches!(token.kind, TokenKind::Ident { quoted: false, .. });
        if self.peek().is_some_and(|t| t.is("(")) {
            if let (true, Some(op)) = (unquoted, AggOp::from_name(&name.name)) {
                return self.aggregate(op, name);
            }
            return self.call(name);
        }
        let column = if !self.eat(".") {
            None
        } else if self.eat("*") {
            Some(Name {
                name: ROWS.to_string(),
                span: self.last_end() - 1..self.last_end(),
            })
        } else {
            Some(self.name("a value column name or '*' after '.'")?)
        };
        let terms = if self.eat("[") {
            Some(self.terms()?)
        } else {
            None
        };
        Ok(Ast {
            kind: AstKind::Access {
                tensor: name,
                column,
                terms,
            },
            span: token.span.start..self.last_end(),
        })
    }

    fn terms(&mut self) -> Result<Vec<Term>> {
        let mut terms = Vec::new();
        if self.eat("]") {
            return Ok(terms);
        }
        loop {
            let token = self.peek().cloned();
            let term = match token.as_ref().map(|t| &t.kind) {
                Some(TokenKind::Int(i)) => Term::Int(*i, token_span(&token)),
                Some(TokenKind::Str(s)) => Term::Str(s.clone(), token_span(&token)),
                _ if token.as_ref().is_some_and(|t| t.is("-")) => {
                    return Err(self
                        .expected("an index: a name, a coordinate (0, 1, ...) or a 'string' key"));
                }
                _ => Term::Var(
                    self.name("an index: a name, a coordinate (0, 1, ...) or a 'string' key")?,
                ),
            };
            if !matches!(term, Term::Var(_)) {
                self.at += 1;
            }
            terms.push(term);
            if self.eat("]") {
                return Ok(terms);
            }
            self.expect(",", "',' or ']' after an index")?;
        }
    }

    fn aggregate(&mut self, op: AggOp, keyword: Name) -> Result<Ast> {
        self.expect("(", "'('")?;
        let mut indices = Vec::new();
        loop {
            let is_name = matches!(
                (self.peek().map(|t| &t.kind), self.peek_at(1)),
                (Some(TokenKind::Ident { .. }), Some(next)) if next.is(",") || next.is(")")
            );
            if !is_name {
                let hint = match op {
                    AggOp::Max => "; for the larger of two values use greatest(a, b)",
                    AggOp::Min => "; for the smaller of two values use least(a, b)",
                    _ => "",
                };
                let error = self.expected(&format!(
                    "the name of an index to aggregate over, as in {}(j) A[i,j]",
                    op.name()
                ));
                return Err(with_hint(error, hint));
            }
            indices.push(self.name("an index name")?);
            if self.eat(")") {
                break;
            }
            self.expect(",", "',' or ')'")?;
        }
        if self.peek().is_none_or(|t| t.is(")") || t.is(",")) {
            return Err(self.error_at(
                keyword.span.start..self.last_end(),
                &format!(
                    "{}(...) must be followed by the expression to aggregate",
                    op.name()
                ),
            ));
        }
        let body = self.expr()?;
        Ok(Ast {
            span: keyword.span.start..body.span.end,
            kind: AstKind::Aggregate {
                op,
                indices,
                body: Box::new(body),
            },
        })
    }

    fn call(&mut self, function: Name) -> Result<Ast> {
        self.expect("(", "'('")?;
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                args.push(self.expr()?);
                if self.eat(")") {
                    break;
                }
                self.expect(",", "',' or ')' in the argument list")?;
            }
        }
        Ok(Ast {
            span: function.span.start..self.last_end(),
            kind: AstKind::Call { function, args },
        })
    }
}

/// `error` with `hint` appended to its innermost message.
fn with_hint(error: Error, hint: &str) -> Error {
    match error {
        Error::Positioned {
            line,
            column,
            excerpt,
            source,
        } => Error::Positioned {
            line,
            column,
            excerpt,
            source: Box::new(with_hint(*source, hint)),
        },
        Error::Syntax(message) => Error::Syntax(format!("{message}{hint}")),
        other => other,
    }
}

fn token_span(token: &Option<Token>) -> Range<usize> {
    token.as_ref().map_or(0..0, |t| t.span.clone())
}

fn is_keyword(name: &str) -> bool {
    ["and", "or", "true", "false"]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(name))
}

fn describe(token: &Token) -> String {
    match &token.kind {
        TokenKind::Ident { name, .. } => format!("'{name}'"),
        TokenKind::Int(i) => format!("the number {i}"),
        TokenKind::Float(x) => format!("the number {x}"),
        TokenKind::Str(s) => format!("the string '{s}'"),
        TokenKind::Symbol(s) => format!("'{s}'"),
    }
}
