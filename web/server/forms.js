// The anti-forgery token (web/server/identity.py FORM_COOKIE): sent as a header with every request this page makes to
// its own server, so an admin event can prove it comes from this page. Another site can make the browser send
// NewsLoop's cookies, but cannot read this one to name the header.
(() => {
  const COOKIE = 'newsloop_form';
  const HEADER = 'x-newsloop-form';
  const token = () => {
    const found = document.cookie.split(';').map((part) => part.trim()).find((part) => part.startsWith(COOKIE + '='));
    return found ? decodeURIComponent(found.slice(COOKIE.length + 1)) : '';
  };
  const original = window.fetch.bind(window);
  window.fetch = (input, init) => {
    try {
      const url = new URL(input instanceof Request ? input.url : String(input), window.location.href);
      const value = token();
      if (value && url.origin === window.location.origin) {
        const headers = new Headers((init && init.headers) || (input instanceof Request ? input.headers : undefined));
        headers.set(HEADER, value);
        init = Object.assign({}, init, {headers: headers});
      }
    } catch (error) {
      // A URL fetch cannot parse goes out unchanged, and fails there as it would have.
    }
    return original(input, init);
  };
})();
