//! Parsing the attribute's arguments: `#[scan_op(key = value, …)]`.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Token, Type};

/// The operator function: a closure or a `fn` item.
pub enum OpFn {
    /// `op = |x, y| …`
    Closure(syn::ExprClosure),
    /// `op = fn name(x: T, y: T) -> T { … }`
    Fn(Box<syn::ItemFn>),
}

/// Everything the attribute may say; each field is `None` when absent.
#[derive(Default)]
pub struct Args {
    pub element: Option<Type>,
    pub identity: Option<syn::Expr>,
    pub op: Option<OpFn>,
    pub krate: Option<syn::Path>,
    pub block_threads: Option<syn::LitInt>,
    pub items_per_thread: Option<syn::LitInt>,
    pub commutative: Option<syn::LitBool>,
}

enum Arg {
    Element(Type),
    Identity(syn::Expr),
    Op(OpFn),
    Crate(syn::Path),
    BlockThreads(syn::LitInt),
    ItemsPerThread(syn::LitInt),
    Commutative(syn::LitBool),
}

const KEYS: &str =
    "`element`, `identity`, `op`, `commutative`, `block_threads`, `items_per_thread` or `crate`";

impl Parse for Arg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(Token![crate]) {
            input.parse::<Token![crate]>()?;
            input.parse::<Token![=]>()?;
            return Ok(Arg::Crate(input.parse()?));
        }
        let key: syn::Ident = input
            .parse()
            .map_err(|e| syn::Error::new(e.span(), format!("expected {KEYS}")))?;
        input.parse::<Token![=]>()?;
        match key.to_string().as_str() {
            "element" => Ok(Arg::Element(input.parse()?)),
            "identity" => Ok(Arg::Identity(input.parse()?)),
            "op" => {
                if input.peek(Token![fn]) {
                    Ok(Arg::Op(OpFn::Fn(Box::new(input.parse()?))))
                } else {
                    match input.parse::<syn::Expr>()? {
                        syn::Expr::Closure(c) => Ok(Arg::Op(OpFn::Closure(c))),
                        other => Err(syn::Error::new_spanned(
                            other,
                            "`op` must be a closure of two elements (`|x, y| …`) or a function written here \
                             (`fn combine(x: T, y: T) -> T { … }`): the macro translates its body to CUDA, \
                             so it cannot refer to a function defined elsewhere",
                        )),
                    }
                }
            }
            "block_threads" => Ok(Arg::BlockThreads(input.parse()?)),
            "items_per_thread" => Ok(Arg::ItemsPerThread(input.parse()?)),
            "commutative" => Ok(Arg::Commutative(input.parse().map_err(
                |e: syn::Error| syn::Error::new(e.span(), "`commutative` takes `true` or `false`"),
            )?)),
            _ => Err(syn::Error::new(
                key.span(),
                format!("unknown argument `{key}`: expected {KEYS}"),
            )),
        }
    }
}

impl Args {
    /// Parses the arguments, reporting duplicates.
    pub fn parse(tokens: proc_macro2::TokenStream) -> syn::Result<Args> {
        let list =
            syn::parse::Parser::parse2(Punctuated::<Arg, Token![,]>::parse_terminated, tokens)?;
        let mut args = Args::default();
        let mut errors: Option<syn::Error> = None;
        let mut duplicate = |span: proc_macro2::Span, what: &str| {
            let e = syn::Error::new(span, format!("`{what}` is given twice"));
            match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            }
        };
        for arg in list {
            match arg {
                Arg::Element(t) => match args.element {
                    Some(_) => duplicate(syn::spanned::Spanned::span(&t), "element"),
                    None => args.element = Some(t),
                },
                Arg::Identity(e) => match args.identity {
                    Some(_) => duplicate(syn::spanned::Spanned::span(&e), "identity"),
                    None => args.identity = Some(e),
                },
                Arg::Op(o) => match args.op {
                    Some(_) => {
                        let span = match &o {
                            OpFn::Closure(c) => syn::spanned::Spanned::span(c),
                            OpFn::Fn(f) => syn::spanned::Spanned::span(&f.sig),
                        };
                        duplicate(span, "op")
                    }
                    None => args.op = Some(o),
                },
                Arg::Crate(p) => args.krate = Some(p),
                Arg::BlockThreads(l) => args.block_threads = Some(l),
                Arg::ItemsPerThread(l) => args.items_per_thread = Some(l),
                Arg::Commutative(b) => match args.commutative {
                    Some(_) => duplicate(b.span, "commutative"),
                    None => args.commutative = Some(b),
                },
            }
        }
        match errors {
            Some(e) => Err(e),
            None => Ok(args),
        }
    }
}

/// The arguments of a stage's attribute (`#[scan_map(input = …, output =
/// …, map = |x| …)]`, `#[scan_predicate(element = …, keep = |x| …)]`):
/// type arguments by key, the function, and `crate`.
pub struct StageArgs {
    pub types: Vec<(syn::Ident, Type)>,
    pub function: Option<OpFn>,
    pub krate: Option<syn::Path>,
}

impl StageArgs {
    /// Parses `key = value, …` where `type_keys` take a type and
    /// `function_key` a closure or `fn`; an unknown or repeated key is an
    /// error on it.
    pub fn parse(
        tokens: proc_macro2::TokenStream,
        type_keys: &[&str],
        function_key: &str,
    ) -> syn::Result<StageArgs> {
        let expected = type_keys
            .iter()
            .chain([&function_key])
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
            + " or `crate`";
        let parser = |input: ParseStream<'_>| -> syn::Result<StageArgs> {
            let mut args = StageArgs {
                types: Vec::new(),
                function: None,
                krate: None,
            };
            while !input.is_empty() {
                if input.peek(Token![crate]) {
                    input.parse::<Token![crate]>()?;
                    input.parse::<Token![=]>()?;
                    args.krate = Some(input.parse()?);
                } else {
                    let key: syn::Ident = input
                        .parse()
                        .map_err(|e| syn::Error::new(e.span(), format!("expected {expected}")))?;
                    input.parse::<Token![=]>()?;
                    let name = key.to_string();
                    if name == function_key {
                        if args.function.is_some() {
                            return Err(syn::Error::new(
                                key.span(),
                                format!("`{key}` is given twice"),
                            ));
                        }
                        args.function = Some(if input.peek(Token![fn]) {
                            OpFn::Fn(Box::new(input.parse()?))
                        } else {
                            match input.parse::<syn::Expr>()? {
                                syn::Expr::Closure(c) => OpFn::Closure(c),
                                other => {
                                    return Err(syn::Error::new_spanned(
                                        other,
                                        format!(
                                            "`{function_key}` must be a closure (`|x| …`) or a function written here \
                                             (`fn f(x: T) -> U {{ … }}`): the macro translates its body to CUDA, \
                                             so it cannot refer to a function defined elsewhere"
                                        ),
                                    ))
                                }
                            }
                        });
                    } else if type_keys.contains(&name.as_str()) {
                        if args.types.iter().any(|(k, _)| *k == key) {
                            return Err(syn::Error::new(
                                key.span(),
                                format!("`{key}` is given twice"),
                            ));
                        }
                        args.types.push((key, input.parse()?));
                    } else {
                        return Err(syn::Error::new(
                            key.span(),
                            format!("unknown argument `{key}`: expected {expected}"),
                        ));
                    }
                }
                if !input.is_empty() {
                    input.parse::<Token![,]>()?;
                }
            }
            Ok(args)
        };
        syn::parse::Parser::parse2(parser, tokens)
    }

    /// The type given for `key`.
    pub fn ty(&self, key: &str) -> Option<&Type> {
        self.types.iter().find(|(k, _)| k == key).map(|(_, t)| t)
    }
}
