//! The attribute's arguments: `ring_entries = N`, `blocking_threads = N`, `workers = N`.
//!
//! What is checked here, at compile time: that each name is known and given at most once,
//! that its value is an integer literal of the setter's type, that it is not zero (no setting
//! accepts zero). Upper limits (the ring's maximum size, what the
//! kernel and the machine allow) belong to `baton::Builder::build`, which reports them at run
//! time: the macro does not copy limits that the runtime owns.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Expr, ExprLit, Lit, LitInt};

/// The argument names, in the order error messages list them.
const KNOWN: &str = "`ring_entries`, `blocking_threads` and `workers`";

/// The parsed arguments, each the checked literal the user wrote (passed on as it is, so the
/// generated setter call points at the user's argument); `None` means "the builder's default".
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) ring_entries: Option<LitInt>,
    pub(crate) blocking_threads: Option<LitInt>,
    pub(crate) workers: Option<LitInt>,
}

impl Args {
    /// Parses the attribute's tokens; `attribute` is its name for messages (`#[baton::main]`).
    pub(crate) fn parse(tokens: TokenStream, attribute: &str) -> syn::Result<Args> {
        let mut args = Args::default();
        let parser = syn::meta::parser(|meta| args.parse_one(&meta, attribute));
        parser.parse2(tokens)?;
        Ok(args)
    }

    fn parse_one(&mut self, meta: &ParseNestedMeta<'_>, attribute: &str) -> syn::Result<()> {
        let Some(name) = meta.path.get_ident().map(|ident| ident.to_string()) else {
            return Err(meta.error(format!(
                "unknown argument of {attribute}; the known arguments are {KNOWN}"
            )));
        };
        match name.as_str() {
            "ring_entries" => {
                let literal = nonzero_integer::<u32>(
                    meta,
                    &name,
                    "u32",
                    "the ring needs room for one request",
                )?;
                let span = literal.span();
                set(&mut self.ring_entries, literal, span, &name)
            }
            "blocking_threads" => {
                let literal = nonzero_integer::<usize>(
                    meta,
                    &name,
                    "usize",
                    "blocking jobs need a thread to run on",
                )?;
                let span = literal.span();
                set(&mut self.blocking_threads, literal, span, &name)
            }
            "workers" => {
                let literal = nonzero_integer::<usize>(
                    meta,
                    &name,
                    "usize",
                    "a runtime runs its tasks on its workers",
                )?;
                let span = literal.span();
                set(&mut self.workers, literal, span, &name)
            }
            _ => Err(meta.error(format!(
                "unknown argument `{name}` of {attribute}; the known arguments are {KNOWN}"
            ))),
        }
    }
}

/// The `= <integer literal>` after `name`, unsuffixed.
fn integer(meta: &ParseNestedMeta<'_>, name: &str) -> syn::Result<LitInt> {
    if !meta.input.peek(syn::Token![=]) {
        return Err(meta.error(format!(
            "`{name}` needs a value, e.g. `{name} = {}`",
            example(name)
        )));
    }
    let expr: Expr = meta.value()?.parse()?;
    match expr {
        // Without its suffix (`256u64`): the setter's parameter type decides.
        Expr::Lit(ExprLit {
            lit: Lit::Int(literal),
            ..
        }) => Ok(LitInt::new(literal.base10_digits(), literal.span())),
        other => Err(syn::Error::new_spanned(
            other,
            format!(
                "`{name}` takes a positive integer literal, e.g. `{name} = {}`",
                example(name)
            ),
        )),
    }
}

/// The literal's value as a `T`, or an error saying the type it must fit.
fn fits<T>(literal: &LitInt, name: &str, type_name: &str) -> syn::Result<T>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    literal.base10_parse::<T>().map_err(|_| {
        syn::Error::new(
            literal.span(),
            format!("`{name}` must fit in a {type_name}; `{literal}` does not"),
        )
    })
}

/// The `= <integer literal>` after `name` ([`integer`]), checked to fit a `T` ([`fits`]) and
/// not to be zero ([`nonzero`], `why` saying what zero would leave out).
fn nonzero_integer<T>(
    meta: &ParseNestedMeta<'_>,
    name: &str,
    type_name: &str,
    why: &str,
) -> syn::Result<LitInt>
where
    T: std::str::FromStr + Default + PartialEq,
    T::Err: std::fmt::Display,
{
    let literal = integer(meta, name)?;
    let value = fits::<T>(&literal, name, type_name)?;
    nonzero(&literal, name, value == T::default(), why)?;
    Ok(literal)
}

fn nonzero(literal: &LitInt, name: &str, is_zero: bool, why: &str) -> syn::Result<()> {
    if is_zero {
        return Err(syn::Error::new(
            literal.span(),
            format!("`{name}` must be at least 1: {why}"),
        ));
    }
    Ok(())
}

fn set<T>(slot: &mut Option<T>, value: T, span: Span, name: &str) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(
            span,
            format!("`{name}` is given twice; keep one"),
        ));
    }
    *slot = Some(value);
    Ok(())
}

fn example(name: &str) -> &'static str {
    match name {
        "ring_entries" => "256",
        "blocking_threads" => "4",
        _ => "2",
    }
}
