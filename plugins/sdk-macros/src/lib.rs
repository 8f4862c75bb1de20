//! `#[tool]`: turns a plain function into a tool of a tiny-harness plugin.
//! Use it through `tiny-harness-plugin`, which re-exports it and documents
//! it; this crate holds only the attribute.
//!
//! Invariants:
//! - The function is left exactly as written (callable, testable); the
//!   attribute only adds, beside it, a braced struct of the same name (a
//!   type, so it never clashes with the function) implementing
//!   `tiny_harness_plugin::ToolFn`, which `tools![...]` lists.
//! - Everything the tool's definition holds comes from the source: the
//!   name from the function (or `name = "..."`), the description from its
//!   doc comment, the behaviour hints from the attribute's words; a word
//!   the attribute does not know is a compile error naming those it does.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::{Expr, FnArg, ItemFn, Lit, LitStr, Meta, ReturnType, parse_macro_input};

/// The behaviour hints, as the attribute spells them.
const HINTS: [&str; 4] = ["read_only", "idempotent", "destructive", "open_world"];

/// Makes the function below a tool; see `tiny_harness_plugin::tool`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut hints = [false; 4];
    let mut name: Option<LitStr> = None;
    let mut schemas = Schemas::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            name = Some(meta.value()?.parse()?);
            return Ok(());
        }
        if meta.path.is_ident("input_schema") {
            schemas.input = Some(meta.value()?.parse()?);
            return Ok(());
        }
        if meta.path.is_ident("output_schema") {
            schemas.output = Some(meta.value()?.parse()?);
            return Ok(());
        }
        for (i, hint) in HINTS.iter().enumerate() {
            if meta.path.is_ident(hint) {
                hints[i] = true;
                return Ok(());
            }
        }
        Err(meta.error(format!(
            "#[tool] takes `name = \"...\"`, `input_schema = path`, `output_schema = path` \
             and the hints {}",
            HINTS.join(", ")
        )))
    });
    parse_macro_input!(attr with parser);
    let function = parse_macro_input!(item as ItemFn);
    match expand(&function, hints, name, schemas) {
        Ok(tokens) => tokens.into(),
        Err(err) => {
            let err = err.to_compile_error();
            quote!(#function #err).into()
        }
    }
}

/// Schemas written by hand: paths to functions returning the schema as a
/// `serde_json::Value`, used as they are instead of derived ones.
#[derive(Default)]
struct Schemas {
    input: Option<syn::Path>,
    output: Option<syn::Path>,
}

/// The function, then its tool type.
fn expand(
    function: &ItemFn,
    hints: [bool; 4],
    name: Option<LitStr>,
    schemas: Schemas,
) -> syn::Result<proc_macro2::TokenStream> {
    let ident = &function.sig.ident;
    let vis = &function.vis;
    let name = name.unwrap_or_else(|| LitStr::new(&ident.to_string(), ident.span()));
    let description = LitStr::new(&doc_text(&function.attrs), Span::call_site());
    let inputs: Vec<&FnArg> = function.sig.inputs.iter().collect();
    let (args_ty, with_context) = match inputs.as_slice() {
        [FnArg::Typed(args)] => (&args.ty, false),
        [FnArg::Typed(_), FnArg::Typed(args)] => (&args.ty, true),
        _ => {
            return Err(syn::Error::new_spanned(
                &function.sig,
                "a tool takes its arguments, or `&Context` and its arguments: \
                 `fn name(args: Args)` or `fn name(cx: &Context, args: Args)`",
            ));
        }
    };
    let ReturnType::Type(_, returns) = &function.sig.output else {
        return Err(syn::Error::new_spanned(
            &function.sig,
            "a tool returns `Result<T, E>`, where T is a String, Json<_> or Output \
             and E converts into ToolError",
        ));
    };
    if function.sig.asyncness.is_some() || !function.sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &function.sig,
            "a tool is a plain function: not async and not generic",
        ));
    }
    let call = if with_context {
        quote!(#ident(cx, args))
    } else {
        quote!({
            let _ = cx;
            #ident(args)
        })
    };
    if schemas.input.is_none()
        && let Some(kind) = not_an_object(args_ty)
    {
        return Err(syn::Error::new_spanned(
            args_ty,
            format!(
                "a tool's arguments are a JSON object, and {kind} is not one: take a struct \
                 with named fields, such as `#[derive(Deserialize, JsonSchema)] struct Args \
                 {{ text: String }}` (or give #[tool(input_schema = ...)])"
            ),
        ));
    }
    let [read_only, idempotent, destructive, open_world] = hints;
    let derived = schemas.input.is_none();
    let input_schema = match &schemas.input {
        Some(path) => quote!({
            fn written() -> ::std::result::Result<::tiny_harness_plugin::__private::Value, ::std::string::String> {
                ::std::result::Result::Ok(#path())
            }
            written
        }),
        None => quote!(::tiny_harness_plugin::__private::input_schema_checked::<#args_ty>),
    };
    let output_schema = match &schemas.output {
        Some(path) => quote!({
            fn written() -> ::std::option::Option<::tiny_harness_plugin::__private::Value> {
                ::std::option::Option::Some(#path())
            }
            written
        }),
        None => quote!(<#returns as ::tiny_harness_plugin::Returns>::output_schema),
    };
    Ok(quote! {
        #function

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis struct #ident {}

        impl ::tiny_harness_plugin::ToolFn for #ident {
            fn tool() -> ::tiny_harness_plugin::Tool {
                ::tiny_harness_plugin::Tool::__new(
                    #name,
                    #description,
                    ::tiny_harness_plugin::Annotations {
                        read_only: #read_only,
                        idempotent: #idempotent,
                        destructive: #destructive,
                        open_world: #open_world,
                    },
                    #derived,
                    #input_schema,
                    #output_schema,
                    |cx, arguments| {
                        ::tiny_harness_plugin::__private::run::<#args_ty, #returns>(
                            arguments,
                            |args| #call,
                        )
                    },
                )
            }
        }
    })
}

/// What `ty` is, when it is plainly a type whose JSON is not an object
/// (a string, number, boolean, sequence, tuple or option): the derived
/// input schema could never be one, and the host would refuse the tool.
/// Anything else (a struct, a map, a type alias) passes, to be checked at
/// register.
fn not_an_object(ty: &syn::Type) -> Option<String> {
    const NOT_OBJECTS: &[&str] = &[
        "String", "str", "bool", "char", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16",
        "u32", "u64", "u128", "usize", "f32", "f64", "Vec", "VecDeque", "HashSet", "BTreeSet",
        "Option", "PathBuf", "Path", "Cow",
    ];
    match ty {
        syn::Type::Reference(r) => not_an_object(&r.elem),
        syn::Type::Paren(p) => not_an_object(&p.elem),
        syn::Type::Group(g) => not_an_object(&g.elem),
        syn::Type::Tuple(t) if t.elems.is_empty() => Some("`()`".to_owned()),
        syn::Type::Tuple(_) => Some("a tuple".to_owned()),
        syn::Type::Array(_) | syn::Type::Slice(_) => Some("an array".to_owned()),
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let name = last.ident.to_string();
            NOT_OBJECTS
                .contains(&name.as_str())
                .then(|| format!("`{name}`"))
        }
        _ => None,
    }
}

/// The doc comment's text: each line without the one space `///` leaves,
/// lines of a paragraph joined by a space, paragraphs by a blank line.
fn doc_text(attrs: &[syn::Attribute]) -> String {
    let mut paragraphs: Vec<String> = vec![String::new()];
    for attr in attrs {
        let Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        if !nv.path.is_ident("doc") {
            continue;
        }
        let Expr::Lit(lit) = &nv.value else { continue };
        let Lit::Str(text) = &lit.lit else { continue };
        for line in text.value().lines() {
            let line = line.trim();
            let last = paragraphs.last_mut().expect("never empty");
            if line.is_empty() {
                if !last.is_empty() {
                    paragraphs.push(String::new());
                }
            } else {
                if !last.is_empty() {
                    last.push(' ');
                }
                last.push_str(line);
            }
        }
    }
    paragraphs.retain(|p| !p.is_empty());
    paragraphs.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::not_an_object;

    fn check(ty: &str) -> Option<String> {
        not_an_object(&syn::parse_str(ty).unwrap())
    }

    #[test]
    fn plain_values_sequences_and_options_are_not_objects() {
        assert_eq!(check("String").as_deref(), Some("`String`"));
        assert_eq!(check("&str").as_deref(), Some("`str`"));
        assert_eq!(check("std::string::String").as_deref(), Some("`String`"));
        assert_eq!(check("u32").as_deref(), Some("`u32`"));
        assert_eq!(check("Vec<Args>").as_deref(), Some("`Vec`"));
        assert_eq!(check("Option<Args>").as_deref(), Some("`Option`"));
        assert_eq!(check("(String, u32)").as_deref(), Some("a tuple"));
        assert_eq!(check("[u8; 4]").as_deref(), Some("an array"));
        assert_eq!(check("()").as_deref(), Some("`()`"));
    }

    #[test]
    fn structs_maps_and_aliases_pass() {
        for ty in [
            "Args",
            "crate::Args",
            "HashMap<String, u32>",
            "BTreeMap<String, Value>",
            "serde_json::Value",
        ] {
            assert_eq!(check(ty), None, "{ty}");
        }
    }
}
