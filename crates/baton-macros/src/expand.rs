//! Checks the annotated function and generates the synchronous function that runs it.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, ReturnType};

use crate::args::Args;

/// Which attribute is being expanded.
#[derive(Clone, Copy)]
pub(crate) enum Entry {
    /// `#[baton::main]`: the function becomes a synchronous function of the same name.
    Main,
    /// `#[baton::test]`: the same, marked `#[test]`.
    Test,
}

impl Entry {
    fn attribute(self) -> &'static str {
        match self {
            Entry::Main => "#[baton::main]",
            Entry::Test => "#[baton::test]",
        }
    }
}

/// The whole expansion: the generated function, or the errors found (all of them, combined)
/// with a stand-in that keeps rustc from adding unrelated errors.
pub(crate) fn expand(entry: Entry, attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = Args::parse(attr, entry.attribute());
    let function = syn::parse2::<ItemFn>(item.clone()).map_err(|err| {
        syn::Error::new(
            err.span(),
            format!(
                "{} goes on an `async fn`; this is not a function ({err})",
                entry.attribute()
            ),
        )
    });
    let function = match function {
        Ok(function) => function,
        Err(mut err) => {
            if let Err(args_err) = args {
                err.combine(args_err);
            }
            // Not a function: give the item back untouched, with the error.
            let error = err.to_compile_error();
            return quote! { #item #error };
        }
    };
    let checked = check(entry, &function);
    match (args, checked) {
        (Ok(args), Ok(())) => generate(entry, &args, function),
        (Err(mut first), Err(second)) => {
            first.combine(second);
            stand_in(entry, &function, first)
        }
        (Err(err), Ok(())) | (Ok(_), Err(err)) => stand_in(entry, &function, err),
    }
}

/// The function's shape: `async`, no parameters, no generics, no second `#[test]`.
fn check(entry: Entry, function: &ItemFn) -> syn::Result<()> {
    let attribute = entry.attribute();
    let sig = &function.sig;
    let mut errors: Vec<syn::Error> = Vec::new();
    if sig.asyncness.is_none() {
        let name = &sig.ident;
        let advice = match entry {
            Entry::Main => format!("write `async fn {name}`"),
            Entry::Test => {
                format!("write `async fn {name}`, or use plain `#[test]` for a synchronous test")
            }
        };
        errors.push(syn::Error::new(
            sig.fn_token.span(),
            format!("{attribute} goes on an `async fn`; `{name}` is not async: {advice}"),
        ));
    }
    if !sig.inputs.is_empty() {
        errors.push(syn::Error::new(
            sig.inputs.span(),
            format!(
                "{attribute} functions take no parameters (nothing could pass them); remove \
                 the parameters of `{}` and build the values inside its body",
                sig.ident
            ),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(syn::Error::new(
            sig.generics.span(),
            format!("{attribute} functions cannot be generic; remove the generic parameters"),
        ));
    }
    if let Entry::Test = entry
        && let Some(test) = function.attrs.iter().find(|a| a.path().is_ident("test"))
    {
        errors.push(syn::Error::new(
            test.span(),
            "#[baton::test] already marks the function `#[test]`; remove this `#[test]`",
        ));
    }
    let mut errors = errors.into_iter();
    match errors.next() {
        None => Ok(()),
        Some(mut first) => {
            errors.for_each(|err| first.combine(err));
            Err(first)
        }
    }
}

/// The function rewritten: same attributes, visibility, name and return type, synchronous, its
/// body run by `block_on` on a runtime built from the arguments.
fn generate(entry: Entry, args: &Args, function: ItemFn) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
        ..
    } = function;
    sig.asyncness = None;
    let output = match &sig.output {
        ReturnType::Default => quote! { () },
        ReturnType::Type(_, ty) => quote! { #ty },
    };
    let mut settings = TokenStream::new();
    if let Some(literal) = &args.ring_entries {
        settings.extend(quote_spanned! { literal.span()=> .ring_entries(#literal) });
    }
    if let Some(literal) = &args.blocking_threads {
        settings.extend(quote_spanned! { literal.span()=> .blocking_threads(#literal) });
    }
    if let Some(literal) = &args.workers {
        settings.extend(quote_spanned! { literal.span()=> .workers(#literal) });
    }
    let test = match entry {
        Entry::Main => TokenStream::new(),
        Entry::Test => quote! { #[::core::prelude::v1::test] },
    };
    let attribute = entry.attribute();
    // Hygienic names: the user's body cannot see them, nor they the user's.
    let body = Ident::new("body", Span::mixed_site());
    let runtime = Ident::new("runtime", Span::mixed_site());
    quote! {
        #test
        #(#attrs)*
        #vis #sig {
            let #body = async #block;
            // Names the body's output type, so `?` and `Ok(())` in the body infer it.
            let #body: ::core::pin::Pin<&mut dyn ::core::future::Future<Output = #output>> =
                ::core::pin::pin!(#body);
            let #runtime = ::baton::Builder::new()
                #settings
                .build()
                .unwrap_or_else(|err| {
                    ::core::panic!(
                        "{} could not build its runtime: {}",
                        #attribute,
                        err
                    )
                });
            #runtime.block_on(#body)
        }
    }
}

/// The errors, plus — for `#[baton::main]` — an empty synchronous function of the same name,
/// so that a crate whose `main` carried the attribute still has a `main` and rustc reports only
/// the attribute's errors.
fn stand_in(entry: Entry, function: &ItemFn, err: syn::Error) -> TokenStream {
    let error = err.to_compile_error();
    match entry {
        Entry::Main => {
            let vis = &function.vis;
            let ident = &function.sig.ident;
            quote! { #error #vis fn #ident() {} }
        }
        Entry::Test => error,
    }
}
