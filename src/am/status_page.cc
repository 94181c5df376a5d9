#include "am/status_page.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/job_state.h"
#include "history/job_view.h"

namespace loom::am {

namespace {

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string HttpResponse(int code, const std::string& reason, const std::string& type, const std::string& body) {
  return "HTTP/1.0 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n" +
         body;
}

}  // namespace

StatusPage::StatusPage(history::JobDir dir, std::string job_id) : dir_(std::move(dir)), job_id_(std::move(job_id)) {}

StatusPage::~StatusPage() { Stop(); }

Result<int> StatusPage::Start(const std::string& bind_address) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::FromErrno("socket", errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, bind_address.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("status page: bad bind address " + bind_address);
  }
  socklen_t len = sizeof(addr);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Status::FromErrno("status page listen", errno);
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) return Status::FromErrno("status page eventfd", errno);
  thread_ = std::thread([this] { Serve(); });
  return static_cast<int>(ntohs(addr.sin_port));
}

void StatusPage::Stop() {
  stopping_ = true;
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
  for (int* fd : {&listen_fd_, &wake_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void StatusPage::Serve() {
  while (!stopping_) {
    pollfd pfd[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(pfd, 2, -1) <= 0 || !(pfd[0].revents & POLLIN)) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    // One short request per connection; a client that sends nothing within a second is dropped.
    std::string request;
    char buf[2048];
    while (request.find("\r\n") == std::string::npos && request.size() < 8192) {
      pollfd in{fd, POLLIN, 0};
      if (::poll(&in, 1, 1000) <= 0) break;
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    std::string response = Respond(request.substr(0, request.find("\r\n")));
    (void)::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
    ::close(fd);
  }
}

std::string StatusPage::Respond(const std::string& request_line) const {
  std::string method = request_line.substr(0, request_line.find(' '));
  size_t p = request_line.find(' ');
  std::string path = p == std::string::npos ? "" : request_line.substr(p + 1, request_line.find(' ', p + 1) - p - 1);
  if (size_t q = path.find('?'); q != std::string::npos) path.resize(q);
  if (method != "GET") return HttpResponse(405, "Method Not Allowed", "text/plain", "only GET\n");
  Page page = Render(path);
  const char* reason = page.code == 200 ? "OK" : page.code == 404 ? "Not Found" : "Internal Server Error";
  return HttpResponse(page.code, reason, page.content_type, page.body);
}

StatusPage::Page StatusPage::Render(const std::string& path) const {
  auto view = history::LoadJobView(dir_);
  if (!view.ok()) return {500, "text/plain", view.status().ToString() + "\n"};
  view->id = job_id_;
  if (path == "/status.json") return {200, "application/json", history::ToJson(*view).dump(2) + "\n"};
  if (path != "/" && path != "/index.html") return {404, "text/plain", "not found\n"};
  std::string body = "<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"5\">"
                     "<title>Loom " + HtmlEscape(view->id) + "</title><style>body{font-family:sans-serif;margin:2em}"
                     "pre{background:#f6f8fa;padding:1em}</style></head><body><h1>" + HtmlEscape(view->name) +
                     "</h1><p>job <code>" + HtmlEscape(view->id) + "</code> &middot; <b>" + HtmlEscape(view->state) +
                     "</b>" + (view->attempt ? " &middot; restart " + std::to_string(view->attempt) : "") + "</p>";
  if (!view->diagnostics.empty()) body += "<p>" + HtmlEscape(view->diagnostics) + "</p>";
  // TonY links its TensorBoard from the tracking page: once it answers, while its task runs.
  if (!view->tensorboard_url.empty()) {
    const history::TaskView* tb = nullptr;
    for (const auto& t : view->tasks) {
      if (t.id == view->tensorboard_task) tb = &t;
    }
    if (tb && !IsTerminal(tb->state)) {
      body += "<p><a id=\"tensorboard\" href=\"" + HtmlEscape(view->tensorboard_url) + "\">TensorBoard</a> (" +
              HtmlEscape(tb->id) + ")</p>";
    }
  }
  body += "<pre>" + HtmlEscape(history::RenderTaskTable(*view)) + "</pre>" +
          "<p><a href=\"status.json\">status.json</a></p></body></html>\n";
  return {200, "text/html; charset=utf-8", body};
}

}  // namespace loom::am
